"""Limit/offset pagination for the API's lists (A1), ``{"items": [...], "count": N}``.

An endpoint returns a queryset and names its own ``...ListOut`` response schema;
``@paginate(LimitOffset)`` adds ``?limit=&offset=``, slices the queryset and counts it.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property
from ninja import Field, Schema, pagination
from ninja.pagination import PaginationBase

MAX_LIMIT = 1000
MAX_OFFSET = 10_000_000


class LimitOffset(PaginationBase):
    """``?limit=`` (default 50, at most 1000) and ``?offset=`` over a queryset."""

    # None keeps the endpoint's declared response schema (ninja would otherwise replace
    # it with a generated "Paged<Item>" schema, renaming it in the OpenAPI document).
    Output = None  # type: ignore[assignment]

    class Input(Schema):
        limit: int = Field(50, ge=1, le=MAX_LIMIT)
        offset: int = Field(0, ge=0, le=MAX_OFFSET)

    def paginate_queryset(
        self,
        queryset: QuerySet[Any],
        pagination: Any,
        request: HttpRequest,
        **params: Any,
    ) -> dict[str, Any]:
        start = pagination.offset
        # An endpoint that knows the total without counting rows (the status counters,
        # issue 16) sets ``known_count`` on the queryset it returns; one whose rows are
        # costly to build (joins, subqueries) sets ``page_by_ids``.
        known = getattr(queryset, "known_count", None)
        end = start + pagination.limit
        if start and getattr(queryset, "page_by_ids", False):
            # The page's ids first, then those rows (see CountedPaginator; issue 16).
            items = list(queryset.filter(pk__in=queryset.values("pk")[start:end]))
        else:
            items = list(queryset[start:end])
        return {"items": items, "count": known if known is not None else queryset.count()}


class LimitOffset100(LimitOffset):
    """Default page of 100 (evidence lists)."""

    class Input(Schema):
        limit: int = Field(100, ge=1, le=MAX_LIMIT)
        offset: int = Field(0, ge=0, le=MAX_OFFSET)


class LimitOffset200(LimitOffset):
    """Default page of 200 (transcripts)."""

    class Input(Schema):
        limit: int = Field(200, ge=1, le=MAX_LIMIT)
        offset: int = Field(0, ge=0, le=MAX_OFFSET)


def paginate(
    pagination_class: type[PaginationBase],
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """ninja's ``paginate`` for views in modules with ``from __future__ import
    annotations``: ninja reads the wrapper's annotations in the namespace of
    ``ninja.pagination``, so they are resolved here, in the view's own module, first."""

    def decorator(view: Callable[..., Any]) -> Callable[..., Any]:
        view.__annotations__ = typing.get_type_hints(view, include_extras=True)
        return pagination.paginate(pagination_class)(view)

    return decorator


class CountedPaginator(Paginator):
    """Django's Paginator told its total instead of counting the rows (a page of a
    million tasks would otherwise scan them all for the page count; issue 16).

    Past the first page it reads the page's ids first (``ORDER BY ... OFFSET n LIMIT
    50`` on the ids alone: an index-only scan where an index matches the ordering) and
    then only those rows with their joins and annotations: a plain OFFSET would build
    every skipped row, annotations included (the queue's last page of 100,000 did 100,000
    rows of correlated subqueries)."""

    def __init__(self, object_list: Any, per_page: int, *, count: int | None) -> None:
        super().__init__(object_list, per_page)
        self._known_count = count

    @cached_property
    def count(self) -> int:
        if self._known_count is not None:
            return self._known_count
        return super().count

    def page(self, number: Any) -> Page:
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        rows = self.object_list
        if bottom and isinstance(rows, QuerySet):
            page_ids = rows.values("pk")[bottom:top]
            return Page(rows.filter(pk__in=page_ids), number, self)
        return Page(rows[bottom:top], number, self)
