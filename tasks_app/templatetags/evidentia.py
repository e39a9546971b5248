"""Template helpers for the review UI. Every helper that returns HTML escapes its input:
tool output, requests and model output are data, never markup (U7)."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.urls import NoReverseMatch, reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()


@register.simple_tag
def account_url() -> str:
    """The API helper's account page, when it is installed."""
    try:
        return reverse("account")
    except NoReverseMatch:
        return ""


@register.filter
def numbered_lines(text: str | None) -> SafeString:
    """One escaped ``<span class="l">`` per line; CSS counters draw the line numbers so
    copying the text never copies them."""
    lines = (text or "").split("\n")
    # Every line is escaped before it is joined; nothing of the input stays markup.
    last = len(lines) - 1
    body = "".join(
        f'<span class="l">{escape(line)}{"" if i == last else chr(10)}</span>'
        for i, line in enumerate(lines)
    )
    return mark_safe(body)  # noqa: S308 - built from escaped parts only


@register.filter
def pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


@register.filter
def compact_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


@register.filter
def chars(value: int | None) -> str:
    n = int(value or 0)
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} M chars"
    if n >= 10_000:
        return f"{n / 1000:.0f} k chars"
    return f"{n:,} chars"


@register.filter
def model_label(name: str | None) -> str:
    """Offline models are labelled as stand-ins, never presented as LLMs (X7)."""
    if not name:
        return ""
    try:
        from tasks_app.agents.models import display_model_name
    except ImportError:
        if name.startswith("offline:"):
            return f"{name} (offline stand-in, not an LLM)"
        return name
    try:
        return display_model_name(name)
    except Exception:  # a label must never break a page
        return name


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def as_list(value: Any) -> list[Any]:
    """Validator result fields that should be lists but may be a string or missing."""
    if value in (None, ""):
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


@register.filter
def raw_text(item: Any) -> str:
    """A stored raw validator response: text as is, anything else as pretty JSON."""
    if isinstance(item, str):
        return item
    return pretty_json(item)


@register.filter
def thousands(value: int | None) -> str:
    return f"{int(value or 0):,}"


@register.filter
def raw_parts(item: Any) -> dict[str, Any]:
    """A stored raw validator response split into its text, exactly as the model
    returned it, and the facts recorded beside it (attempt, tokens, latency...)."""
    if isinstance(item, str):
        return {"text": item, "meta": []}
    if isinstance(item, dict) and isinstance(item.get("text"), str):
        meta = [(k, v) for k, v in item.items() if k != "text" and v not in (None, "", [], {})]
        return {
            "text": item["text"],
            "meta": [
                (k, compact_json(v) if not isinstance(v, str | int | float) else v) for k, v in meta
            ],
        }
    return {"text": pretty_json(item), "meta": []}
