"""ToolEvidence's table takes the name of the app it lives in: tasks_app_toolevidence (it
kept evidence_app_toolevidence when the model moved here in 0016). A table rename: every
row, index and constraint stays; reversed, the table takes its old name back."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('tasks_app', '0021_audit_webhook_events'),
    ]

    operations = [
        migrations.AlterModelTable(
            name='toolevidence',
            table=None,
        ),
    ]
