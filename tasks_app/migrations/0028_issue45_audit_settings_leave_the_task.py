"""Issue 45: a task's audit rates, the operator's exception to the floor and its second
judge are evidence_app's (``TaskAuditSettings``); its 0012 copied them, so the columns go.
Backwards they come back empty and evidence_app's 0012 reversed fills them again."""

from __future__ import annotations

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("tasks_app", "0027_issue46_judge_webhook_events"),
        ("evidence_app", "0012_issue45_task_audit_settings"),
    ]

    operations = [
        migrations.RemoveField(model_name="task", name=name)
        for name in (
            "audit_rate",
            "audit_reject_rate",
            "audit_rate_set_by",
            "audit_rate_set_at",
            "audit_rate_reason",
            "second_model",
        )
    ]
