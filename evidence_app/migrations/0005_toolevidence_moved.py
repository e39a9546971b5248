"""ToolEvidence now belongs to tasks_app (its migration 0016 takes the state over); the
table stays where it is, under its old name."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("evidence_app", "0004_replay_requests"),
        ("tasks_app", "0016_toolevidence"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ToolEvidence")],
            database_operations=[],
        ),
    ]
