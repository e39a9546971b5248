"""The knowledge base the agents search."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class KnowledgeDocumentQuerySet(models.QuerySet["KnowledgeDocument"]):
    def for_list(self) -> KnowledgeDocumentQuerySet:
        return self.defer("body")


class KnowledgeDocument(models.Model):
    """A document of the knowledge base the agents search.

    On PostgreSQL a GIN index over the weighted title + body vector that
    ``search_knowledge`` matches (migration 0004) backs full-text search.
    """

    title = models.CharField(max_length=500)
    body = models.TextField()
    source_url = models.CharField(max_length=2000, blank=True, default="")
    # Where it was imported from (file name), so a re-import updates instead of copying.
    source_key = models.CharField(max_length=500, unique=True, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = KnowledgeDocumentQuerySet.as_manager()

    class Meta:
        ordering = ["title"]

    def __str__(self) -> str:
        return self.title
