"""The JSON Schema of the client protocol, generated from the Structs (``corral protocol schema``)."""

from __future__ import annotations

from typing import Any

import msgspec

from .base import PROTOCOL_VERSION
from .messages import RESULT_TYPES, AnyFrame


def client_protocol_schema() -> dict[str, Any]:
    """One JSON Schema document: every frame as a ``type``-discriminated union, results in ``$defs``."""
    result_types = tuple(dict.fromkeys(RESULT_TYPES.values()))
    (root, *results), defs = msgspec.json.schema_components(
        (AnyFrame, *result_types), ref_template="#/$defs/{name}"
    )
    schema: dict[str, Any] = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:corral:protocol:{PROTOCOL_VERSION}",
        "title": f"corral client protocol, version {PROTOCOL_VERSION}",
        **root,
        "$defs": defs,
    }
    schema["$defs"]["MethodResults"] = {
        "description": "The shape of ok.result for each method.",
        "properties": {
            method: {"$ref": f"#/$defs/{cls.__name__}"} for method, cls in RESULT_TYPES.items()
        },
    }
    return schema
