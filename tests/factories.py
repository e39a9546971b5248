from __future__ import annotations

from typing import Any

import factory
from django.contrib.auth import get_user_model

from evidence_app.models import TaskAuditSettings, ValidationSnapshot
from tasks_app.models import KnowledgeDocument, Run, RunMessage, Task, ToolEvidence


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", "pw-123456")

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):  # noqa: N805
        if create:
            obj.save()


# A task's own audit settings and second judge: evidence_app keeps them beside the task
# (issue 45); TaskFactory(audit_rate=..., second_model=...) stores the row.
AUDIT_SETTINGS = tuple(
    f.name for f in TaskAuditSettings._meta.concrete_fields if f.name not in ("id", "task")
)


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task

    owner = factory.SubFactory(UserFactory)
    title = factory.Sequence(lambda n: f"Task {n}")
    request = "What is the annual training budget per employee?"

    @classmethod
    def _create(cls, model_class: Any, *args: Any, **kwargs: Any) -> Task:
        own = {name: kwargs.pop(name) for name in AUDIT_SETTINGS if name in kwargs}
        task = super()._create(model_class, *args, **kwargs)
        if own:
            TaskAuditSettings.objects.create(task=task, **own)
        return task


class RunFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Run

    task = factory.SubFactory(TaskFactory)
    attempt_index = 1
    model_name = "test:model"
    status = "completed"
    finish_reason = "stop"


class RunMessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = RunMessage

    run = factory.SubFactory(RunFactory)
    index = factory.Sequence(lambda n: n)
    role = "assistant"
    content = ""


class ToolEvidenceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ToolEvidence

    run = factory.SubFactory(RunFactory)
    task = factory.LazyAttribute(lambda o: o.run.task)
    attempt_index = factory.LazyAttribute(lambda o: o.run.attempt_index)
    sequence = factory.Sequence(lambda n: n)
    tool_name = "read_document"
    tool_call_id = factory.Sequence(lambda n: f"call_{n}")
    arguments = factory.LazyFunction(lambda: {"document_id": 1})
    content = "The annual training budget per employee is 1,800 EUR."


class ValidationSnapshotFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ValidationSnapshot

    task = factory.SubFactory(TaskFactory)
    attempt_index = 1
    status = "accepted"


class KnowledgeDocumentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = KnowledgeDocument

    title = factory.Sequence(lambda n: f"Document {n}")
    body = "Body text."
