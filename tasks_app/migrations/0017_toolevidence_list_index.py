# Issue 26: the task page lists a task's first tool results ordered by (attempt, run,
# sequence); an index in that order reads them without sorting the others (an attempt can
# hold 20,000). It also serves the (task, attempt) lookups of the index it replaces, which
# is dropped only once the new one is built.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tasks_app", "0016_toolevidence"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="toolevidence",
            index=models.Index(
                fields=["task", "attempt_index", "run", "sequence"], name="evidence_task_list"
            ),
        ),
        migrations.RemoveIndex(model_name="toolevidence", name="evidence_task_attempt"),
    ]
