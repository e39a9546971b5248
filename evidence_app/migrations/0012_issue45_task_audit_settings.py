"""Issue 45: a task's audit rates, the operator's exception to the floor and its second
judge leave tasks_app's task table for evidence_app's ``TaskAuditSettings``, one row
beside each task that has any of them. This migration makes the table and copies every
such task's values; tasks_app's 0028 then drops the columns. Backwards, the values are
copied onto the task again (0028 reversed has put the columns back first)."""

from __future__ import annotations

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

FIELDS = (
    "audit_rate",
    "audit_reject_rate",
    "audit_rate_set_by_id",
    "audit_rate_set_at",
    "audit_rate_reason",
    "second_model",
)
BATCH = 1000


def _has_settings() -> models.Q:
    """A task with any value that is not its default."""
    return (
        models.Q(audit_rate__isnull=False)
        | models.Q(audit_reject_rate__isnull=False)
        | models.Q(audit_rate_set_by__isnull=False)
        | models.Q(audit_rate_set_at__isnull=False)
        | ~models.Q(audit_rate_reason="")
        | ~models.Q(second_model="")
    )


def copy_to_settings(apps, schema_editor):
    Task = apps.get_model("tasks_app", "Task")
    Settings = apps.get_model("evidence_app", "TaskAuditSettings")
    rows = Task.objects.filter(_has_settings()).order_by("pk").values_list("pk", *FIELDS)
    batch = []
    for pk, *values in rows.iterator(chunk_size=BATCH):
        batch.append(Settings(task_id=pk, **dict(zip(FIELDS, values, strict=True))))
        if len(batch) >= BATCH:
            Settings.objects.bulk_create(batch)
            batch = []
    Settings.objects.bulk_create(batch)


def copy_to_tasks(apps, schema_editor):
    Task = apps.get_model("tasks_app", "Task")
    Settings = apps.get_model("evidence_app", "TaskAuditSettings")
    for row in Settings.objects.order_by("pk").iterator(chunk_size=BATCH):
        Task.objects.filter(pk=row.task_id).update(
            **{name: getattr(row, name) for name in FIELDS}
        )


class Migration(migrations.Migration):
    dependencies = [
        ("evidence_app", "0011_issue43_threshold_per_judge"),
        ("tasks_app", "0027_issue46_judge_webhook_events"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="TaskAuditSettings",
            fields=[
                (
                    "task",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="audit_settings",
                        serialize=False,
                        to="tasks_app.task",
                    ),
                ),
                ("audit_rate", models.FloatField(blank=True, null=True)),
                ("audit_reject_rate", models.FloatField(blank=True, null=True)),
                ("audit_rate_set_at", models.DateTimeField(blank=True, null=True)),
                ("audit_rate_reason", models.TextField(blank=True, default="")),
                ("second_model", models.CharField(blank=True, default="", max_length=200)),
                (
                    "audit_rate_set_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
        ),
        migrations.RunPython(copy_to_settings, copy_to_tasks),
    ]
