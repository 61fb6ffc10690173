"""What a workspace asks its model server before the first prompt.

With a base URL and no model name, the server's ``/models``: exactly one served model
is taken (and the chat is told which); several, or none, leave the configuration
error saying so. Then the window the server runs the model with (``crank.vendors``
``discover``), so ``crank/state`` and the meter show the real window, not the
catalog's guess, before anything is sent; a changed window is published as a
``usage_update``. Folder settings an untrusted workspace ignored are said here too,
once, as a ``notice``: the user sees why the folder's model or base URL is not used.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from crank.agent.events import ContextUsage, Event
from crank.agent.model import Model
from crank.vendors import discover

from .provider import ModelConfig

log = logging.getLogger(__name__)


async def discover_server(
    config: ModelConfig,
    current: Callable[[], Model],
    adopt: Callable[[Model], None],
    usage: Callable[[], ContextUsage],
    emit: Callable[[Event], None],
    ignored: tuple[str, ...] = (),
) -> None:
    for problem in ignored:
        emit({"type": "notice", "kind": "settings_ignored", "message": problem})
    try:
        found = await config.discover_model()
        if found is not None:
            model, line = found
            adopt(model)
            emit({"type": "notice", "kind": "model_discovered", "message": line})
        model = current()
        before = model.context_window
        await discover(model)
    except Exception:  # asking is a courtesy: a failure must never cost a prompt
        log.exception("asking the model server before the first prompt failed")
        return
    if model is current() and model.context_window != before:
        emit({"type": "usage_update", **usage()})
