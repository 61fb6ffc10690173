"""The published ACP v1 JSON schema as the judge of every message on the wire.

``schema/v1/schema.json`` is pinned here as shipped in the npm package
``@agentclientprotocol/sdk`` 2.4.0 (``schema/v1/schema.json``, sha256 in
``SCHEMA_SHA256``; Apache-2.0, ``schema/LICENSE``). The SDKs' own models are not the
judge: they accept values the schema forbids (a status ``"bogus"``, a diff without
``newText``) and fill defaults for what is missing.

``Judge`` sees each message once, with the side that sent it, and checks:
- the envelope against the schema's top-level ``Agent`` or ``Client`` message;
- a request's or notification's ``params`` against the definition whose ``x-method``
  is that method and whose side handles it (a method the schema does not list is a
  violation, unless it is an extension method, ``_``-prefixed);
- a response's ``result`` against the response definition of the method its id was
  asked with (the ids of each side are tracked apart), an error against ``Error``.

Each violation is kept with the message, so a failing test shows what was sent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

import jsonschema
from referencing import Registry, Resource

SCHEMA_FILE = Path(__file__).parent / "schema" / "v1" / "schema.json"
SCHEMA_SHA256 = "0d0b1ca83c4872e5473f68926a894c7a8203b59b118e2a79bfe43dd76fbcbc1a"
SCHEMA_SOURCE = "@agentclientprotocol/sdk@2.4.0 schema/v1/schema.json"

Side = Literal["agent", "client"]
"""Who sent a message: ``agent`` is Crank, ``client`` the editor."""
_SUFFIXES = {"request": ("Request",), "notification": ("Notification",), "result": ("Response",)}


@cache
def schema() -> dict[str, Any]:
    raw = SCHEMA_FILE.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    assert digest == SCHEMA_SHA256, f"{SCHEMA_FILE} is not the pinned schema ({digest})"
    loaded: dict[str, Any] = json.loads(raw)
    return loaded


BASE = "urn:acp:v1"


@cache
def _validator(pointer: str) -> Any:
    """A validator for the part of the schema at ``pointer`` (``/$defs/Name``)."""
    registry: Registry[Any] = Registry().with_resource(BASE, Resource.from_contents(schema()))
    cls = jsonschema.validators.validator_for(schema())
    return cls({"$ref": f"{BASE}#{pointer}"}, registry=registry)


def definition(method: str, handled_by: Side, kind: str) -> str | None:
    """The ``$defs`` name for ``method``'s params (``request``/``notification``) or its
    ``result``, on the side that handles the method."""
    defs = schema()["$defs"]
    for name, body in defs.items():
        if body.get("x-method") != method or body.get("x-side") != handled_by:
            continue
        if name.endswith(_SUFFIXES[kind]):
            return name
    return None


def _errors(pointer: str, value: Any, limit: int = 5) -> list[str]:
    """What is wrong with ``value``, each error narrowed to the branch of an ``anyOf``
    that came closest (``best_match``), so it names the field."""
    shown: list[str] = []
    for error in list(_validator(pointer).iter_errors(value))[:limit]:
        for leaf in _narrowed(error):
            where = "/".join(str(part) for part in leaf.absolute_path) or "(top)"
            shown.append(f"{where}: {leaf.message[:300]}")
    return shown


def _narrowed(error: Any) -> list[Any]:
    """The errors of the ``anyOf`` branch meant (a branch whose discriminator, a
    ``const`` such as ``sessionUpdate`` or ``type``, does not match is not meant)."""
    if not error.context:
        return [error]
    branches: dict[Any, list[Any]] = {}
    for sub in error.context:
        branches.setdefault(sub.schema_path[0], []).append(sub)
    meant = [
        errors
        for errors in branches.values()
        if not any(e.validator == "const" and e.relative_path for e in errors)
    ]
    if len(meant) != 1:
        return [error]
    return [leaf for sub in meant[0] for leaf in _narrowed(sub)]


@dataclass
class Judge:
    """Every message of one connection, in the order each side sent them."""

    violations: list[str] = field(default_factory=list)
    messages: list[tuple[Side, dict[str, Any]]] = field(default_factory=list)
    _asked: dict[tuple[Side, Any], str] = field(default_factory=dict)

    def asked(self, sender: Side, request_id: Any, method: str) -> None:
        """``sender`` asked ``method`` with this id (for a test that sends lines the
        judge is not shown, such as deliberately broken ones)."""
        self._asked[(sender, request_id)] = method

    def see(self, sender: Side, message: Any) -> None:
        self.messages.append((sender, message))
        problems = self._check(sender, message)
        if problems:
            shown = json.dumps(message, ensure_ascii=False)[:1500]
            self.violations.append(f"{sender} sent {shown}\n  " + "\n  ".join(problems))

    def _check(self, sender: Side, message: Any) -> list[str]:
        if not isinstance(message, dict):
            return ["not a JSON object"]
        other: Side = "client" if sender == "agent" else "agent"
        envelope = "Agent" if sender == "agent" else "Client"
        index = [m.get("title") for m in schema()["anyOf"]].index(envelope)
        problems = [f"envelope: {e}" for e in _errors(f"/anyOf/{index}", message, 1)]
        method = message.get("method")
        if isinstance(method, str):
            if method.startswith("_"):
                return problems  # an extension method: only its envelope is ACP's
            kind = "request" if "id" in message else "notification"
            name = definition(method, other, kind)
            if name is None:
                return [*problems, f"{method} is not a {kind} the {other} handles in ACP v1"]
            if kind == "request":
                self._asked[(sender, message["id"])] = method
            params = message.get("params")
            return problems + _errors(f"/$defs/{name}", params)
        if "id" not in message:
            return [*problems, "neither a request, a notification nor a response"]
        asked = self._asked.pop((other, message["id"]), None)
        if "error" in message:
            return problems + _errors("/$defs/Error", message["error"])
        if asked is None:
            return [*problems, f"an answer to id {message['id']!r}, never asked"]
        name = definition(asked, sender, "result")
        if name is None:
            return [*problems, f"no response definition for {asked}"]
        return problems + _errors(f"/$defs/{name}", message.get("result"))

    def assert_valid(self) -> None:
        assert not self.violations, (
            f"{len(self.violations)} message(s) break ACP's schema ({SCHEMA_SOURCE}):\n"
            + "\n".join(self.violations[:20])
        )

    def sent(self, sender: Side) -> Iterable[dict[str, Any]]:
        return (message for side, message in self.messages if side == sender)
