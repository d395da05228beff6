"""A small JSON Schema validator: the subset of draft 2020-12 that edgesdk's schemas use.

edgesdk checks every board.json against edgesdk/boards/board.schema.json when it loads it. The schema is
a standard JSON Schema (any validator can read it; tests/test_board_file.py checks the two agree when the
`jsonschema` package happens to be installed), but edgesdk does not depend on a validator package: this one
implements the keywords below and refuses a schema that uses any other, so a keyword can never be ignored
silently.

    type (string or list; "integer" excludes booleans and accepts 3.0), enum, const, pattern (as in JSON
    Schema, it matches anywhere in the string unless anchored with ^...$), minimum,
    maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength, minItems, maxItems, items,
    properties, required, additionalProperties, propertyNames, $ref ("#/$defs/NAME"), and the annotations
    $schema, $id, title, description, $comment.

validate() returns every problem as (location, message) where location names the field
("peripherals.uart0.base") and the message says what is allowed (the schema's "description" of the field).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

ANNOTATIONS = {"$schema", "$id", "title", "description", "$comment", "$defs", "examples", "default"}
KEYWORDS = {"type", "enum", "const", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
            "minLength", "maxLength", "minItems", "maxItems", "items", "properties", "required",
            "additionalProperties", "propertyNames", "$ref"} | ANNOTATIONS


class SchemaError(ValueError):
    """The schema itself uses something this validator does not implement."""


@lru_cache(maxsize=None)
def load_schema(path: str) -> dict:
    schema = json.loads(Path(path).read_text())
    check_schema(schema)
    return schema


def check_schema(schema, root=None, where="#") -> None:
    """Raise SchemaError if `schema` uses a keyword or a $ref this validator does not implement."""
    root = schema if root is None else root
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        raise SchemaError(f"{where}: a schema must be an object or a boolean")
    unknown = set(schema) - KEYWORDS
    if unknown:
        raise SchemaError(f"{where}: unsupported keyword(s) {sorted(unknown)}")
    if "$ref" in schema:
        _resolve(root, schema["$ref"])
    for key in ("items", "additionalProperties", "propertyNames"):
        if key in schema:
            check_schema(schema[key], root, f"{where}/{key}")
    for group in ("properties", "$defs"):
        for name, sub in schema.get(group, {}).items():
            check_schema(sub, root, f"{where}/{group}/{name}")
    if "pattern" in schema:
        re.compile(schema["pattern"])
    types = schema.get("type", [])
    for name in [types] if isinstance(types, str) else types:
        if name not in TYPE_NAMES:
            raise SchemaError(f"{where}: unknown type {name!r}")


def _resolve(root: dict, ref: str) -> dict:
    match = re.fullmatch(r"#/\$defs/([A-Za-z0-9_]+)", ref)
    if match is None or match.group(1) not in root.get("$defs", {}):
        raise SchemaError(f"unsupported or unknown $ref {ref!r} (only '#/$defs/NAME')")
    return root["$defs"][match.group(1)]


_PY_TYPES = {"string": str, "object": dict, "array": list}
TYPE_NAMES = {"integer", "number", "boolean", "null"} | set(_PY_TYPES)


def _type_ok(value, name: str) -> bool:
    if name == "integer":  # JSON Schema: 3.0 is an integer, true is not
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    return isinstance(value, _PY_TYPES[name])


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate(instance, schema: dict, root: dict | None = None, location: str = "") -> list:
    """Every way `instance` violates `schema`, as [(location, message)], location "" for the whole document."""
    root = schema if root is None else root
    if schema is True:
        return []
    if schema is False:
        return [(location, "is not allowed here")]
    if "$ref" in schema:
        target = _resolve(root, schema["$ref"])
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return validate(instance, merged, root, location)
    allowed = schema.get("description")

    def problem(text: str) -> list:
        return [(location, text + (f"; allowed: {allowed}" if allowed else ""))]

    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_type_ok(instance, t) for t in names):
            return problem(f"must be {' or '.join(_article(t) for t in names)}, not {_describe(instance)}")
    if "enum" in schema and instance not in schema["enum"]:
        return problem(f"{_short(instance)} is not one of {', '.join(_short(v) for v in schema['enum'])}")
    if "const" in schema and instance != schema["const"]:
        return problem(f"must be {_short(schema['const'])}")
    if isinstance(instance, str):
        if "minLength" in schema and len(instance) < schema["minLength"]:
            return problem(f"{_short(instance)} is shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(instance) > schema["maxLength"]:
            return problem(f"is longer than {schema['maxLength']} characters")
        if "pattern" in schema and re.search(schema["pattern"], instance) is None:
            return problem(f"{_short(instance)} is not allowed")
    if _is_number(instance):
        if "minimum" in schema and instance < schema["minimum"]:
            return problem(f"{instance} is less than {schema['minimum']}")
        if "maximum" in schema and instance > schema["maximum"]:
            return problem(f"{instance} is more than {schema['maximum']}")
        if "exclusiveMinimum" in schema and instance <= schema["exclusiveMinimum"]:
            return problem(f"{instance} is not more than {schema['exclusiveMinimum']}")
        if "exclusiveMaximum" in schema and instance >= schema["exclusiveMaximum"]:
            return problem(f"{instance} is not less than {schema['exclusiveMaximum']}")
    errors = []
    if isinstance(instance, list):
        if "minItems" in schema and len(instance) < schema["minItems"]:
            errors += problem(f"needs at least {schema['minItems']} item(s)")
        if "maxItems" in schema and len(instance) > schema["maxItems"]:
            errors += problem(f"has more than {schema['maxItems']} items")
        if "items" in schema:
            for index, item in enumerate(instance):
                errors += validate(item, schema["items"], root, f"{location}[{index}]")
    if isinstance(instance, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in instance:
                sub = properties.get(name, {})
                hint = _resolve(root, sub["$ref"]).get("description") if "$ref" in sub else sub.get("description")
                hint = hint or allowed  # e.g. a map's description names its required keys
                errors.append((_join(location, name), "is missing" + (f"; expected: {hint}" if hint else "")))
        for name, value in instance.items():
            here = _join(location, name)
            if "propertyNames" in schema:
                for _, message in validate(name, schema["propertyNames"], root, here):
                    errors.append((here, f"is not a valid name: {message}"))
            if name in properties:
                errors += validate(value, properties[name], root, here)
            elif "additionalProperties" in schema:
                extra = schema["additionalProperties"]
                if extra is False:
                    known = ", ".join(properties) or "none"
                    errors.append((here, f"is not a known field (known here: {known})"))
                else:
                    errors += validate(value, extra, root, here)
    return errors


def _join(location: str, name: str) -> str:
    return f"{location}.{name}" if location else name


def _article(type_name: str) -> str:
    return {"integer": "an integer", "object": "an object", "array": "a list"}.get(type_name, f"a {type_name}")


def _describe(value) -> str:
    if isinstance(value, bool):
        return "true/false"
    if value is None:
        return "null"
    return {int: "an integer", float: "a number", str: "a string", list: "a list", dict: "an object"}.get(
        type(value), type(value).__name__) + (f" ({_short(value)})" if isinstance(value, (str, int, float)) else "")


def _short(value, limit: int = 60) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
