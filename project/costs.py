"""Cost in money of model requests, priced with ``genai-prices`` at write time.

A request is priced once, when it is recorded, from its usage and the configured model
name, and the figure is stored beside the tokens: a later price change never rewrites
history. A model ``genai-prices`` does not know (the offline stand-ins, ``compat:``
servers, a provider it has no table for) has *no* cost: ``None``, shown as "cost
unknown", never zero. Aggregates (run, attempt, task, day) are sums of stored figures
that also count how many parts were unknown, so a partly priced total says so.

Model names are ours (``openai:gpt-4.1``): the part before the colon is passed to
``genai-prices`` as the provider id (it knows pydantic-ai's provider names, e.g.
``google-gla``), the rest as the model reference. A name without a colon is matched on
the model reference alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from genai_prices import Usage, calc_price

__all__ = [
    "CURRENCY",
    "CostTotal",
    "UNPRICED_PREFIXES",
    "estimate_cost",
    "format_cost",
    "price_request",
    "price_tokens",
]

# genai-prices publishes every price in US dollars.
CURRENCY = "USD"
# Offline stand-ins cost nothing we can name and a compat: server is self-hosted or
# unknown; neither is looked up (a local "llama3.1" must not be priced as a hosted one).
UNPRICED_PREFIXES = ("offline:", "compat:")
# Usage fields genai-prices understands that pydantic-ai's RequestUsage carries.
USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "input_audio_tokens",
    "cache_audio_read_tokens",
    "output_audio_tokens",
)


def _reference(model_name: str) -> tuple[str | None, str] | None:
    name = (model_name or "").strip()
    if not name or name.startswith(UNPRICED_PREFIXES):
        return None
    provider, sep, model = name.partition(":")
    if not sep:
        return None, name
    if not model:
        return None
    return provider, model


def price_tokens(
    model_name: str,
    *,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    at: datetime | None = None,
) -> Decimal | None:
    """Price of one request with this usage, in ``CURRENCY``; None when the model is
    unknown to genai-prices (or its usage cannot be priced)."""
    usage = {
        "input_tokens": input_tokens or 0,
        "output_tokens": output_tokens or 0,
        "cache_read_tokens": cache_read_tokens or 0,
        "cache_write_tokens": cache_write_tokens or 0,
    }
    return _price(model_name, {k: v for k, v in usage.items() if v}, at)


def price_request(model_name: str, usage: Any, *, at: datetime | None = None) -> Decimal | None:
    """Price of one request from a pydantic-ai ``RequestUsage`` (or anything with the
    same token attributes); None when unknown."""
    values = {f: int(getattr(usage, f, 0) or 0) for f in USAGE_FIELDS} if usage is not None else {}
    return _price(model_name, {k: v for k, v in values.items() if v}, at)


def _price(model_name: str, usage: dict[str, int], at: datetime | None) -> Decimal | None:
    reference = _reference(model_name)
    if reference is None:
        return None
    provider_id, model_ref = reference
    try:
        calculation = calc_price(
            Usage(**usage),
            model_ref,
            provider_id=provider_id,
            genai_request_timestamp=at,
        )
    except (LookupError, ValueError):
        # LookupError: unknown provider or model. ValueError: usage it cannot price.
        return None
    return calculation.total_price


def estimate_cost(model_name: str, *, input_tokens: int) -> Decimal | None:
    """Input-side estimate for ``input_tokens`` (bulk replay's estimate before it runs);
    output is not counted. None when the model is unknown."""
    return price_tokens(model_name, input_tokens=input_tokens)


@dataclass
class CostTotal:
    """A sum of stored costs that remembers how many parts were unknown."""

    amount: Decimal = Decimal(0)
    priced: int = 0
    unknown: int = 0

    def add(self, cost: Decimal | None) -> None:
        if cost is None:
            self.unknown += 1
        else:
            self.amount += cost
            self.priced += 1

    def merge(self, other: CostTotal) -> None:
        self.amount += other.amount
        self.priced += other.priced
        self.unknown += other.unknown

    @classmethod
    def of(cls, costs: Iterable[Decimal | None]) -> CostTotal:
        total = cls()
        for cost in costs:
            total.add(cost)
        return total

    @property
    def known(self) -> bool:
        """There is a figure: some part was priced, or there was nothing to price."""
        return self.priced > 0 or self.unknown == 0

    @property
    def complete(self) -> bool:
        """Every part priced: the figure is the whole cost, not a lower bound."""
        return self.unknown == 0

    @property
    def value(self) -> Decimal | None:
        return self.amount if self.known else None

    def as_dict(self) -> dict[str, Any]:
        """The API shape: ``amount`` is null when nothing was priced ("cost unknown")."""
        return {
            "amount": str(self.amount) if self.known else None,
            "currency": CURRENCY,
            "complete": self.complete,
            "priced_parts": self.priced,
            "unknown_parts": self.unknown,
        }

    def __str__(self) -> str:
        if not self.known:
            return "cost unknown"
        text = format_cost(self.amount)
        if self.unknown:
            text += f" + {self.unknown} unpriced"
        return text


def format_cost(amount: Decimal | None) -> str:
    """``$0.0123`` (four significant decimals for small figures); "cost unknown" for None."""
    if amount is None:
        return "cost unknown"
    if amount == 0:
        return "$0.00"
    if abs(amount) >= 1:
        return f"${amount:,.2f}"
    # Small amounts: keep four significant digits after the leading zeros.
    exponent = amount.adjusted()  # e.g. -3 for 0.00123
    places = min(max(2, -exponent + 3), 10)
    return f"${amount:.{places}f}"
