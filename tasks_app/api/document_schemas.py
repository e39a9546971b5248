"""Request and response schemas of the knowledge documents API.

Lists are ``{"items": [...], "count": N}``.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Q
from ninja import FilterSchema, Schema
from pydantic import ConfigDict, Field, field_validator

from project.schemas import NOT_BLANK, Text, not_blank


class DocumentFilter(FilterSchema):
    q: Text | None = Field(None, max_length=500, description="Text in title or body")

    def filter_q(self, value: str | None) -> Q:
        text = (value or "").strip()
        return Q(title__icontains=text) | Q(body__icontains=text) if text else Q()


class DocumentIn(Schema):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=500, json_schema_extra={"pattern": NOT_BLANK})
    body: str = Field(min_length=1, json_schema_extra={"pattern": NOT_BLANK})
    source_url: Text = Field("", max_length=2000)

    _not_blank = field_validator("title", "body")(not_blank)


class DocumentListItemOut(Schema):
    id: int
    title: str
    source_url: str
    source_key: str | None
    created_at: datetime
    updated_at: datetime


class DocumentOut(DocumentListItemOut):
    body: str


class DocumentListOut(Schema):
    items: list[DocumentListItemOut]
    count: int
