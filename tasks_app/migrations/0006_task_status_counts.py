# Counts per status kept by triggers (issue 16): PostgreSQL only.

from django.db import migrations, models

SHARDS = 16

TRIGGERS = f"""
CREATE FUNCTION tasks_app_status_count_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tasks_app_taskstatuscount (status, shard, n)
  SELECT status, (id % {SHARDS})::smallint, count(*) FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (status, shard) DO UPDATE SET n = tasks_app_taskstatuscount.n + EXCLUDED.n;
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_app_status_count_insert AFTER INSERT ON tasks_app_task
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
  EXECUTE FUNCTION tasks_app_status_count_add();

CREATE FUNCTION tasks_app_status_count_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tasks_app_taskstatuscount (status, shard, n)
  SELECT status, (id % {SHARDS})::smallint, -count(*) FROM old_rows GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (status, shard) DO UPDATE SET n = tasks_app_taskstatuscount.n + EXCLUDED.n;
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_app_status_count_delete AFTER DELETE ON tasks_app_task
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
  EXECUTE FUNCTION tasks_app_status_count_remove();

-- A status change (one task per transition): both counter rows in a fixed order, so two
-- transitions never wait on each other's rows in opposite orders (no deadlock).
CREATE FUNCTION tasks_app_status_count_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO tasks_app_taskstatuscount (status, shard, n)
  SELECT s, (NEW.id % {SHARDS})::smallint, d
  FROM (VALUES (OLD.status, -1), (NEW.status, 1)) AS v(s, d) ORDER BY s
  ON CONFLICT (status, shard) DO UPDATE SET n = tasks_app_taskstatuscount.n + EXCLUDED.n;
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_app_status_count_update AFTER UPDATE OF status ON tasks_app_task
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION tasks_app_status_count_move();

CREATE FUNCTION tasks_app_status_count_reset() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM tasks_app_taskstatuscount;
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_app_status_count_truncate AFTER TRUNCATE ON tasks_app_task
  FOR EACH STATEMENT EXECUTE FUNCTION tasks_app_status_count_reset();

INSERT INTO tasks_app_taskstatuscount (status, shard, n)
SELECT status, (id % {SHARDS})::smallint, count(*) FROM tasks_app_task GROUP BY 1, 2;
"""

DROP = """
DROP TRIGGER IF EXISTS tasks_app_status_count_insert ON tasks_app_task;
DROP TRIGGER IF EXISTS tasks_app_status_count_delete ON tasks_app_task;
DROP TRIGGER IF EXISTS tasks_app_status_count_update ON tasks_app_task;
DROP TRIGGER IF EXISTS tasks_app_status_count_truncate ON tasks_app_task;
DROP FUNCTION IF EXISTS tasks_app_status_count_add();
DROP FUNCTION IF EXISTS tasks_app_status_count_remove();
DROP FUNCTION IF EXISTS tasks_app_status_count_move();
DROP FUNCTION IF EXISTS tasks_app_status_count_reset();
"""


def create_triggers(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(TRIGGERS, params=None)


def drop_triggers(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("tasks_app", "0005_task_assigned_to"),
    ]

    operations = [
        migrations.CreateModel(
            name="TaskStatusCount",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("open", "Open"),
                            ("running", "Running"),
                            ("validating", "Validating"),
                            ("awaiting_feedback", "Awaiting feedback"),
                            ("needs_review", "Needs review"),
                            ("needs_revision", "Needs revision"),
                            ("failed", "Failed"),
                            ("closed", "Closed"),
                            ("abandoned", "Abandoned"),
                        ],
                        max_length=32,
                    ),
                ),
                ("shard", models.PositiveSmallIntegerField()),
                ("n", models.BigIntegerField(default=0)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("status", "shard"), name="taskstatuscount_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(create_triggers, drop_triggers),
    ]
