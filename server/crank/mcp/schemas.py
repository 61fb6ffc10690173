"""Whether a server's input schema can be offered to a model.

Providers take an object schema; the tool boundary validates arguments against it
with Draft 2020-12. A schema that is not JSON Schema, or not an object schema, is
refused here (the tool is left out, with a sentence saying why), so a bad server can
never break a run at the boundary.
"""

from __future__ import annotations

from typing import Any


def usable(schema: Any) -> str | None:
    """None when ``schema`` can be offered; else what is wrong with it."""
    from jsonschema import Draft202012Validator, SchemaError

    if not isinstance(schema, dict):
        return "is not a JSON object"
    if schema.get("type", "object") != "object":
        return f"has type {schema.get('type')!r}; a tool's arguments must be an object"
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"is not JSON Schema ({exc.message})"
    return None
