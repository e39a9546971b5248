# Issue 16: the task lists order by (created_at, id); indexes that end with the id let a
# page's ids come from an index-only scan, however deep the page. The new indexes are
# built before the old ones are dropped, so the lists never lose their index.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tasks_app", "0014_taskevent_review_decided"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="task",
            index=models.Index(
                fields=["status", "created_at", "id"], name="task_status_created_id"
            ),
        ),
        migrations.AddIndex(
            model_name="task",
            index=models.Index(fields=["created_at", "id"], name="task_created_id"),
        ),
        migrations.RemoveIndex(model_name="task", name="task_status_created"),
        migrations.RemoveIndex(model_name="task", name="task_created"),
    ]
