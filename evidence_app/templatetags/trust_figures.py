"""Template helpers of the trust page: a share as a percentage, an unknown one as a dash."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def share(value: float | None) -> str:
    """0.0123 → "1.23 %"; None → "–" (nothing to estimate from)."""
    if value is None:
        return "–"
    return f"{value * 100:.2f} %"
