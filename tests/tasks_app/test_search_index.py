"""Knowledge search uses its full-text index (X8, issue 11): the GIN index expression is
the one search_knowledge matches, so PostgreSQL reads the index, not every document."""

from __future__ import annotations

import pytest
from django.db import connection

from tasks_app.knowledge.search import keywords, search_queryset
from tasks_app.models import KnowledgeDocument
from tasks_app.runtime.agents.tools.knowledge import search_knowledge

pytestmark = [
    pytest.mark.postgres(
        reason="the GIN full-text index; SQLite has none (its search reads every document)"
    ),
    pytest.mark.django_db,
]


def test_search_over_10000_documents_uses_the_gin_index() -> None:
    """Issue 11: EXPLAIN of the search over 10,000 documents shows the index."""
    KnowledgeDocument.objects.bulk_create(
        KnowledgeDocument(
            title=f"Routine memo {i}",
            body=f"Minutes of meeting {i} about parking, lunch menus and office plants.",
            source_key=f"memo-{i}",
        )
        for i in range(9_995)
    )
    KnowledgeDocument.objects.bulk_create(
        KnowledgeDocument(
            title=f"Sabbatical policy {i}",
            body="Employees may take a sabbatical after five years of service.",
            source_key=f"sabbatical-{i}",
        )
        for i in range(5)
    )
    assert KnowledgeDocument.objects.count() == 10_000
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE tasks_app_knowledgedocument")

    rows = search_queryset(keywords("How long before a sabbatical?"), 5)
    assert rows is not None
    plan = rows.explain()
    print(plan)
    assert "knowledgedocument_search" in plan, plan
    assert "Seq Scan" not in plan, plan

    result = search_knowledge("How long before a sabbatical?")
    assert "Sabbatical policy" in result.content
    assert "Routine memo" not in result.content
