"""The workspace's model configuration: which provider and model the settings name.

Settings (merged by name) become a model here, or a configuration error that every
prompt is refused (``no_provider``) until the settings are fixed: the error is kept, never
raised at start-up, so the server still answers everything else. A ``crank/setModel``
override is tried against the same layers and, when it fails, changes nothing; a key
configured for another endpoint is never sent, and the log says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from crank.agent.model import Model
from crank.vendors import (
    ConfigError,
    OpenAIModel,
    ProviderConfig,
    ServedModel,
    discover,
    known_models,
    lookup,
)

from .errors import NoProvider
from .models import Unconfigured, build_model
from .settings import Settings


class ModelConfig:
    """The provider the settings name, the model built from it, or why there is none."""

    def __init__(
        self,
        settings: Settings,
        root: Path,
        env: Mapping[str, str] | None,
        log: Callable[[str], None],
    ) -> None:
        self.settings = settings
        self.root = root
        self._env = env
        self._log = log
        self.provider: ProviderConfig | None = None
        self.error: str | None = None
        """The ``no_provider`` text while no provider is configured."""
        self.pending: ProviderConfig | None = None
        """An OpenAI-compatible server with no model named: its ``/models`` may say."""
        self.configured: Model | None = None
        """The model the settings name (not a switch), listed by ``models_json`` after a switch."""

    def configure(self, override: dict[str, Any] | None = None) -> Model:
        """The model for the current settings (``override`` first). Without an override
        a failure is kept in ``error`` and an ``Unconfigured`` stand-in returned; with
        one, ConfigError is raised and nothing changes."""
        try:
            model, provider = build_model(
                self.settings, self.root, override=override, env=self._env
            )
        except ConfigError as exc:
            if override:
                raise ConfigError(
                    f"Crank cannot switch to {override['api']} model {override['model']}: "
                    f"{exc} (keys and base URLs configured for another api are never "
                    "used for this one)"
                ) from exc
            self.provider, self.error, self.pending = None, str(exc), exc.pending
            self.configured = None
            return Unconfigured(str(exc))
        self.provider, self.error, self.pending = provider, None, None
        if not override:
            self.configured = model
        for withheld in provider.withheld_keys:
            self._log(
                f"Crank: {withheld} is not sent to {provider.public()['baseUrl']}: a key "
                "goes only to the endpoint it was configured with"
            )
        return model

    @property
    def base_url(self) -> str | None:
        """Where the current model is asked (the one waiting for a model name too), or
        None while no provider is configured; "" for the scripted model."""
        provider = self.provider or self.pending
        return provider.base_url if provider is not None else None

    async def _served_by_pending(self) -> list[ServedModel] | None:
        if self.pending is None:
            return None
        probe = OpenAIModel(self.pending)
        try:
            return await probe.discover()
        finally:
            await probe.aclose()

    async def discover_model(self) -> tuple[Model, str] | None:
        """With a base URL and no model name: the one model the server serves, taken
        (the model, and the line that says so), or None with ``error`` saying what the
        server offers (or that it said nothing)."""
        pending = self.pending
        if pending is None:
            return None
        served = await self._served_by_pending()
        if served is not None and len(served) == 1:
            model = self.configure({"api": pending.api, "model": served[0].id})
            return model, (
                f"Crank uses {served[0].id}, the one model the server at "
                f"{pending.base_url} serves (set provider.model to choose another)"
            )
        if served:
            names = ", ".join(entry.id for entry in served[:20])
            self.error = (
                f"The OpenAI-compatible server at {pending.base_url} serves {len(served)} "
                f"models ({names}): set provider.model or CRANK_MODEL to one of them, or "
                "pick one with Crank: Select Model."
            )
        else:
            self.error = (
                f"The OpenAI-compatible server at {pending.base_url} needs a model name, and "
                f"its {pending.base_url}/models listed none (is it running?): set "
                "provider.model or CRANK_MODEL."
            )
        return None

    def require(self) -> None:
        """Refuse (``no_provider``, saying what to set) while no provider is configured."""
        if self.error is not None:
            raise NoProvider(self.error)

    async def models_json(self, model: Model) -> dict[str, Any]:
        """``crank/models``: what the configured server serves (``source: "server"``,
        asked each time: a local server's models come and go), then the catalog's cloud
        models, the current model first when it is in neither."""
        if self.error is None:
            served = await discover(model, refresh=True)
            api = model.api
        else:  # a base URL and no model yet: what it serves is the choice
            served = await self._served_by_pending()
            api = self.pending.api if self.pending is not None else model.api
        cached = model.cached_window if isinstance(model, OpenAIModel) else lambda _id: None
        # A server with one model serves it under any name (llama-cpp-python): the
        # configured name is that model, listed once, as the server names it.
        alias = self.error is None and served is not None and len(served) == 1
        listed: list[dict[str, Any]] = [
            {
                "api": api,
                "id": entry.id,
                "contextWindow": entry.context_window
                or (model.context_window if entry.id == model.id or alias else None)
                or cached(entry.id)
                or lookup(api, entry.id, compatible=True).context_window,
                "source": "server",
            }
            for entry in served or ()
        ]
        listed += [
            {"api": api, "id": mid, "contextWindow": window, "source": "catalog"}
            for api, mid, window in known_models()
        ]
        current = {
            "api": model.api,
            "id": model.id,
            "contextWindow": model.context_window,
            "source": "config",
        }
        extra = [] if alias else [current]
        configured = self.configured
        if configured is not None and (configured.api, configured.id) != (model.api, model.id):
            # after a switch the configured model is still one to go back to
            extra.append(
                {
                    "api": configured.api,
                    "id": configured.id,
                    "contextWindow": configured.context_window,
                    "source": "config",
                }
            )
        for position, entry in enumerate(extra):
            if self.error is None and not any(
                m["api"] == entry["api"] and m["id"] == entry["id"] for m in listed
            ):
                listed.insert(position, entry)
        return {"models": listed}
