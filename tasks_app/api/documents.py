"""Knowledge documents the agents' tools search and read; operators write them."""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from ninja import Query, Router, Status

from project.pagination import LimitOffset, paginate
from project.roles import require_operator
from project.schemas import error_responses
from tasks_app.api.document_schemas import DocumentFilter, DocumentIn, DocumentListOut, DocumentOut
from tasks_app.knowledge.models import KnowledgeDocument

router = Router(tags=["tasks"])


@router.post(
    "/documents",
    response={201: DocumentOut, **error_responses(403)},
    summary="Add a knowledge-base document (operators)",
    tags=["documents"],
)
def create_document(request: HttpRequest, payload: DocumentIn) -> Status:
    require_operator(request.auth)  # type: ignore[attr-defined]
    with transaction.atomic():
        document = KnowledgeDocument.objects.create(
            title=payload.title.strip(), body=payload.body, source_url=payload.source_url.strip()
        )
        return Status(201, document)


@router.get(
    "/documents",
    response={200: DocumentListOut, **error_responses(403)},
    summary="List or search knowledge-base documents (operators)",
    tags=["documents"],
)
@paginate(LimitOffset)
def get_documents(
    request: HttpRequest, filters: Query[DocumentFilter]
) -> QuerySet[KnowledgeDocument]:
    require_operator(request.auth)  # type: ignore[attr-defined]
    return filters.filter(KnowledgeDocument.objects.for_list()).order_by("title", "id")


@router.get(
    "/documents/{document_id}",
    response={200: DocumentOut, **error_responses(403, 404)},
    summary="One knowledge-base document with its body (operators)",
    tags=["documents"],
)
def get_document(request: HttpRequest, document_id: int) -> KnowledgeDocument:
    require_operator(request.auth)  # type: ignore[attr-defined]
    document = KnowledgeDocument.objects.filter(pk=document_id).first()
    if document is None:
        raise Http404(f"Document {document_id} not found.")
    return document
