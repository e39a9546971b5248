"""ToolEvidence moves from evidence_app to tasks_app (the runtime and the external intake
write it; the validator reads it). Its table keeps its name: the state moves, no row
does. The content type follows, so admin permissions keep applying."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


def move_content_type(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="tasks_app", model="toolevidence").exists():
        ContentType.objects.filter(app_label="evidence_app", model="toolevidence").update(
            app_label="tasks_app"
        )


def move_content_type_back(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="evidence_app", model="toolevidence").exists():
        ContentType.objects.filter(app_label="tasks_app", model="toolevidence").update(
            app_label="evidence_app"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("evidence_app", "0004_replay_requests"),
        ("tasks_app", "0015_task_list_indexes_with_id"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="ToolEvidence",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("attempt_index", models.PositiveIntegerField()),
                        ("sequence", models.PositiveIntegerField()),
                        ("tool_name", models.CharField(max_length=100)),
                        ("tool_call_id", models.CharField(blank=True, default="", max_length=200)),
                        ("arguments", models.JSONField(blank=True, default=dict)),
                        ("content", models.TextField(blank=True, default="")),
                        ("content_chars", models.PositiveIntegerField(default=0)),
                        ("content_sha256", models.CharField(default="", max_length=64)),
                        ("is_error", models.BooleanField(default=False)),
                        ("url", models.CharField(blank=True, default="", max_length=2000)),
                        ("title", models.CharField(blank=True, default="", max_length=500)),
                        ("event_payload", models.JSONField(blank=True, default=dict)),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "run",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="tool_evidence",
                                to="tasks_app.run",
                            ),
                        ),
                        (
                            "task",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="tool_evidence",
                                to="tasks_app.task",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "evidence_app_toolevidence",
                        "ordering": ["run", "sequence"],
                        "indexes": [
                            models.Index(
                                fields=["task", "attempt_index"], name="evidence_task_attempt"
                            )
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("run", "sequence"), name="evidence_run_sequence_unique"
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_type, move_content_type_back),
    ]
