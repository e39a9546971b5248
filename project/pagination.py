"""Limit/offset pagination for the API's lists, ``{"items": [...], "count": N}``,
and a keyset cursor beside it for the task lists.

An endpoint returns a queryset and names its own ``...ListOut`` response schema;
``@paginate(LimitOffset)`` adds ``?limit=&offset=``, slices the queryset and counts it;
``@paginate(LimitOffsetCursor)`` also answers ``next``, a link that reads the next page
by seeking past the last row's ordering key (``?cursor=``), not by offset.
"""

from __future__ import annotations

import base64
import binascii
import json
import typing
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.core.paginator import Page, Paginator
from django.db import models
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.functional import cached_property
from ninja import Field, Schema, pagination
from ninja.errors import HttpError, ValidationError
from ninja.pagination import PaginationBase

MAX_LIMIT = 1000
# What a cursor looks like (base64url without padding); whether it names a page of this
# list only the server can tell (404 when it does not).
CURSOR_PATTERN = r"^[A-Za-z0-9_-]+$"
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
        # sets ``known_count`` on the queryset it returns; one whose rows are
        # costly to build (joins, subqueries) sets ``page_by_ids``.
        known = getattr(queryset, "known_count", None)
        end = start + pagination.limit
        if start and getattr(queryset, "page_by_ids", False):
            # The page's ids first, then those rows (see CountedPaginator).
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


class LimitOffsetCursor(LimitOffset):
    """``?limit=&offset=`` as :class:`LimitOffset`, or ``?limit=&cursor=``; either way the
    answer's ``next`` is the URL of the following page by cursor (None on the last).

    The cursor is opaque to clients: the list's ordering and the last row's values of its
    ordering fields (e.g. ``created_at`` and ``id``), base64url JSON. The next page is the
    rows strictly after that key in the list's ordering, read from an index as the first
    page is, whatever the depth; a row inserted meanwhile is seen at most once (before
    the cursor, it is not shown; after it, it is), unlike an offset, which shifts."""

    class Input(Schema):
        limit: int = Field(50, ge=1, le=MAX_LIMIT)
        offset: int = Field(0, ge=0, le=MAX_OFFSET)
        cursor: str | None = Field(
            None,
            min_length=1,
            max_length=1000,
            pattern=CURSOR_PATTERN,
            description="The `next` of the previous page (opaque, base64url); not with "
            "`offset`. A well-formed cursor this list did not give answers 404",
        )

    def paginate_queryset(
        self,
        queryset: QuerySet[Any],
        pagination: Any,
        request: HttpRequest,
        **params: Any,
    ) -> dict[str, Any]:
        keys = ordering_keys(queryset)
        if pagination.cursor is not None:
            after = decode_cursor(pagination.cursor, keys, queryset.model)
            if pagination.offset:
                raise ValidationError([_cursor_error("give either cursor or offset, not both")])
            rows = list(queryset.filter(keyset_after(keys, after))[: pagination.limit + 1])
            known = getattr(queryset, "known_count", None)
            count = known if known is not None else queryset.count()
            page = {"items": rows[: pagination.limit], "count": count}
        else:
            page = super().paginate_queryset(queryset, _OneMore(pagination), request, **params)
            rows = page["items"]
            page["items"] = rows[: pagination.limit]
        more = len(rows) > pagination.limit
        page["next"] = (
            _next_url(request, encode_cursor(keys, rows[pagination.limit - 1])) if more else None
        )
        return page


class _OneMore:
    """The same page and one row more: whether a next page exists, without counting."""

    def __init__(self, pagination: Any) -> None:
        self.offset = pagination.offset
        self.limit = pagination.limit + 1


def _cursor_error(message: str) -> dict[str, Any]:
    return {"type": "value_error", "loc": ["query", "cursor"], "msg": message}


def ordering_keys(queryset: QuerySet[Any]) -> list[str]:
    """The queryset's ``order_by`` fields (``-name`` for descending); it must end with the
    primary key, so that the key is unique."""
    keys = [str(k) for k in queryset.query.order_by]
    if not keys or keys[-1].lstrip("-") not in ("id", "pk"):
        raise ValueError("keyset pagination needs an ordering that ends with the id")
    return keys


def encode_cursor(keys: list[str], row: Any) -> str:
    values = []
    for key in keys:
        value = getattr(row, key.lstrip("-"))
        values.append(value.isoformat() if isinstance(value, datetime) else value)
    raw = json.dumps({"o": keys, "v": values}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, keys: list[str], model: type[models.Model]) -> list[Any]:
    """The key values a cursor carries, checked against this list's ordering (422 for a
    cursor that is not one, or one from a list in another ordering)."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        values = list(data["v"])
        if data["o"] != keys or len(values) != len(keys):
            raise ValidationError([_cursor_error("the cursor belongs to another ordering")])
        return [
            _typed(model, key.lstrip("-"), value) for key, value in zip(keys, values, strict=True)
        ]
    except (binascii.Error, ValueError, KeyError, TypeError, OverflowError) as exc:
        # Well formed (the parameter's pattern) but no page this list gave: like an id
        # that names nothing, not found.
        raise HttpError(404, "No page of this list at this cursor (not a cursor it gave).") from exc


def _typed(model: type[models.Model], name: str, value: Any) -> Any:
    field = model._meta.get_field(name)
    if isinstance(field, models.DateTimeField):
        moment = datetime.fromisoformat(str(value))
        if moment.tzinfo is None:
            raise ValueError(name)
        return moment.astimezone(UTC)  # OverflowError at the edges of the calendar
    if isinstance(field, models.IntegerField | models.AutoField):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(name)
        if not -(2**63) <= value < 2**63:  # what a bigint column can compare with
            raise ValueError(name)
    return value


def keyset_after(keys: list[str], values: list[Any]) -> Q:
    """Rows strictly after ``values`` in the ordering ``keys``: (a, b) after (x, y) is
    a > x, or a = x and b > y (``<`` for a descending key)."""
    condition = Q()
    for i in reversed(range(len(keys))):
        name = keys[i].lstrip("-")
        op = "lt" if keys[i].startswith("-") else "gt"
        step = Q(**{f"{name}__{op}": values[i]})
        if i < len(keys) - 1:
            step |= Q(**{name: values[i]}) & condition
        condition = step
    return condition


def _next_url(request: HttpRequest, cursor: str) -> str:
    query = request.GET.copy()
    query.pop("offset", None)
    query["cursor"] = cursor
    return request.build_absolute_uri(f"{request.path}?{query.urlencode()}")


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
    million tasks would otherwise scan them all for the page count).

    Past the first page it reads the page's ids first (``ORDER BY ... OFFSET n LIMIT
    50`` on the ids alone: an index-only scan where an index matches the ordering) and
    then only those rows with their joins and annotations: a plain OFFSET would build
    every skipped row, annotations included (the queue's last page of 100,000 did 100,000
    rows of correlated subqueries). A page in the second half of the list is read from
    the other end (the ordering reversed, skipping only the rows after it), so the last
    page skips none and a deep page at most half the list."""

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
        if not bottom or not isinstance(rows, QuerySet):
            return Page(rows[bottom:top], number, self)
        from_end = self.count - top
        if from_end < bottom and rows.query.order_by:
            # Nearer the end than the start: seek from the end in the reversed ordering
            # (the same index read backwards), so the last page skips no row at all and
            # costs what the first does; rows.filter keeps the list's order.
            page_ids = rows.reverse().values("pk")[from_end : self.count - bottom]
        else:
            page_ids = rows.values("pk")[bottom:top]
        return Page(rows.filter(pk__in=page_ids), number, self)
