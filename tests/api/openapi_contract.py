"""Compare two OpenAPI documents of this API: what a client built on the older one
would lose (a path, an operation, a parameter, a field, a status code, a type) and
what was added. Schemas are compared after resolving ``$ref``s, so a renamed component
is not a change; constraints (patterns, lengths, strictness) a newer document states
are reported as additions, not breaks: they document what the code already enforced.
"""

from __future__ import annotations

from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")


def _resolve(document: dict[str, Any], schema: Any, seen: frozenset[str] = frozenset()) -> Any:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            if ref in seen:
                return {"$recursive": ref}
            target: Any = document
            for part in ref[2:].split("/"):
                target = target[part]
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            return _resolve(document, {**target, **rest}, seen | {ref})
        return {k: _resolve(document, v, seen) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_resolve(document, item, seen) for item in schema]
    return schema


def _types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a schema admits (through anyOf/oneOf/allOf and const/enum)."""
    found: set[str] = set()
    if "type" in schema:
        kind = schema["type"]
        found.update(kind if isinstance(kind, list) else [kind])
    for key in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(key, []):
            found |= _types(option)
    return found


def _properties(schema: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """Properties and required names of an object schema, merged over its variants."""
    properties: dict[str, Any] = dict(schema.get("properties", {}))
    required: set[str] = set(schema.get("required", []))
    for key in ("anyOf", "oneOf", "allOf"):
        for option in schema.get(key, []):
            more, more_required = _properties(option)
            for name, value in more.items():
                properties.setdefault(name, value)
            required |= more_required if key == "allOf" else set()
    return properties, required


def _compare_schema(
    old: Any, new: Any, where: str, *, request: bool, breaks: list[str], additions: list[str]
) -> None:
    if not isinstance(old, dict) or not isinstance(new, dict):
        return
    old_types, new_types = _types(old), _types(new)
    if old_types and new_types != old_types:
        lost, gained = old_types - new_types, new_types - old_types
        if lost:
            breaks.append(f"{where}: type {sorted(old_types)} became {sorted(new_types)}")
        if gained:
            additions.append(f"{where}: also admits {sorted(gained)}")
    for key in ("pattern", "minLength", "maxLength", "minimum", "maximum", "enum", "const"):
        if key in new and new.get(key) != old.get(key):
            additions.append(f"{where}: states {key}={new[key]!r}")
    for key in ("if", "then", "else"):
        if key in new and new.get(key) != old.get(key):
            additions.append(f"{where}: states a conditional rule ({key})")
    for key in ("anyOf", "oneOf"):
        old_options, new_options = old.get(key, []), new.get(key, [])
        if old_options and len(old_options) == len(new_options):
            for old_option, new_option in zip(old_options, new_options, strict=True):
                if "properties" not in old_option:  # object variants are merged below
                    _compare_schema(
                        old_option,
                        new_option,
                        where,
                        request=request,
                        breaks=breaks,
                        additions=additions,
                    )
    old_props, old_required = _properties(old)
    new_props, new_required = _properties(new)
    for name, old_prop in old_props.items():
        path = f"{where}.{name}"
        if name not in new_props:
            breaks.append(f"{path}: field removed")
            continue
        if request and name in new_required and name not in old_required:
            breaks.append(f"{path}: request field became required")
        old_default, new_default = old_prop.get("default"), new_props[name].get("default")
        if request and name not in old_required and old_default != new_default:
            # A client that leaves the field out gets another behaviour (a decision that
            # applied at once and now waits, or the reverse); no default stated is null.
            breaks.append(f"{path}: default {old_default!r} became {new_default!r}")
        if not request and name in old_required and name not in new_required:
            breaks.append(f"{path}: response field no longer always present")
        _compare_schema(
            old_prop, new_props[name], path, request=request, breaks=breaks, additions=additions
        )
    for name in new_props.keys() - old_props.keys():
        additions.append(f"{where}.{name}: field added")
    if "items" in old and "items" in new:
        _compare_schema(
            old["items"],
            new["items"],
            f"{where}[]",
            request=request,
            breaks=breaks,
            additions=additions,
        )


def compare(before: dict[str, Any], after: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(breaking changes, additions) from ``before`` to ``after``."""
    breaks: list[str] = []
    additions: list[str] = []
    for path, old_item in before["paths"].items():
        new_item = after["paths"].get(path)
        if new_item is None:
            breaks.append(f"{path}: path removed")
            continue
        for method in METHODS:
            if method not in old_item:
                continue
            where = f"{method.upper()} {path}"
            if method not in new_item:
                breaks.append(f"{where}: operation removed")
                continue
            old_op = _resolve(before, old_item[method])
            new_op = _resolve(after, new_item[method])
            old_params = {(p["in"], p["name"]): p for p in old_op.get("parameters", [])}
            new_params = {(p["in"], p["name"]): p for p in new_op.get("parameters", [])}
            for key, param in old_params.items():
                label = f"{where} {key[0]} parameter {key[1]}"
                if key not in new_params:
                    breaks.append(f"{label}: removed")
                    continue
                if new_params[key].get("required") and not param.get("required"):
                    breaks.append(f"{label}: became required")
                old_default = param.get("schema", {}).get("default")
                new_default = new_params[key].get("schema", {}).get("default")
                if old_default != new_default:
                    breaks.append(f"{label}: default {old_default!r} became {new_default!r}")
                _compare_schema(
                    param.get("schema"),
                    new_params[key].get("schema"),
                    label,
                    request=True,
                    breaks=breaks,
                    additions=additions,
                )
            for key in new_params.keys() - old_params.keys():
                additions.append(f"{where} {key[0]} parameter {key[1]}: added")
            old_body = old_op.get("requestBody", {}).get("content", {})
            new_body = new_op.get("requestBody", {}).get("content", {})
            for media, content in old_body.items():
                if media not in new_body:
                    breaks.append(f"{where} request body {media}: removed")
                    continue
                _compare_schema(
                    content.get("schema"),
                    new_body[media].get("schema"),
                    f"{where} body",
                    request=True,
                    breaks=breaks,
                    additions=additions,
                )
            old_responses = old_op.get("responses", {})
            new_responses = new_op.get("responses", {})
            for status, response in old_responses.items():
                if status not in new_responses:
                    breaks.append(f"{where} status {status}: removed")
                    continue
                new_content = new_responses[status].get("content", {})
                for media, content in response.get("content", {}).items():
                    if media not in new_content:
                        breaks.append(f"{where} status {status} {media}: removed")
                        continue
                    _compare_schema(
                        content.get("schema"),
                        new_content[media].get("schema"),
                        f"{where} {status}",
                        request=False,
                        breaks=breaks,
                        additions=additions,
                    )
            for status in new_responses.keys() - old_responses.keys():
                additions.append(f"{where} status {status}: added")
        for method in METHODS:
            if method in new_item and method not in old_item:
                additions.append(f"{method.upper()} {path}: operation added")
    for path in after["paths"].keys() - before["paths"].keys():
        additions.append(f"{path}: path added")
    # A field reached through two variants (anyOf/oneOf) is reported once.
    return list(dict.fromkeys(breaks)), list(dict.fromkeys(additions))


def unannounced(breaks: list[str], changelog: str) -> list[str]:
    """The breaking changes the changelog does not name: each must appear, word for
    word, in docs/api-changelog.md (inside backticks), so a client reading it learns of it."""
    return [line for line in breaks if f"`{line}`" not in changelog]
