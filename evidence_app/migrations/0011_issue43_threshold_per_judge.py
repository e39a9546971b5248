"""A certified threshold belongs to the judge that gives the accepted verdict (template
version × model): a task's second judge no longer makes a judge of its own. Thresholds
of a pair are retired (they applied to no verdict any more), then the column goes."""

from __future__ import annotations

from django.db import migrations, models
from django.utils import timezone


def retire_pair_thresholds(apps, schema_editor):
    Threshold = apps.get_model("evidence_app", "AutoAcceptThreshold")
    Threshold.objects.exclude(second_model="").exclude(state="retired").update(
        state="retired", retired_at=timezone.now()
    )


class Migration(migrations.Migration):
    dependencies = [
        ("evidence_app", "0010_issue46_threshold_stop_by"),
    ]

    operations = [
        migrations.RunPython(retire_pair_thresholds, migrations.RunPython.noop),
        migrations.RemoveConstraint(
            model_name="autoacceptthreshold", name="autoacceptthreshold_one_approved"
        ),
        migrations.RemoveIndex(model_name="autoacceptthreshold", name="autoacceptthreshold_judge"),
        migrations.RemoveField(model_name="autoacceptthreshold", name="second_model"),
        migrations.AddConstraint(
            model_name="autoacceptthreshold",
            constraint=models.UniqueConstraint(
                condition=models.Q(("state", "approved")),
                fields=("template_version", "model_name"),
                name="autoacceptthreshold_one_approved",
            ),
        ),
        migrations.AddIndex(
            model_name="autoacceptthreshold",
            index=models.Index(
                fields=["template_version", "model_name", "state"],
                name="autoacceptthreshold_judge",
            ),
        ),
    ]
