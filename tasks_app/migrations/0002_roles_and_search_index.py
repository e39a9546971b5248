"""Create the role groups (roles: docs/ui.md) and, on PostgreSQL, the full-text index (X8)."""

from django.db import migrations

GROUPS = ("reviewers", "operators")

SEARCH_INDEX_SQL = (
    "CREATE INDEX IF NOT EXISTS knowledgedocument_fts ON tasks_app_knowledgedocument "
    "USING gin (to_tsvector('english', coalesce(title, '') || ' ' || coalesce(body, '')))"
)


def create_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in GROUPS:
        Group.objects.get_or_create(name=name)


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=GROUPS).delete()


def create_search_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(SEARCH_INDEX_SQL)


def drop_search_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS knowledgedocument_fts")


class Migration(migrations.Migration):
    dependencies = [
        ("tasks_app", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.RunPython(create_groups, remove_groups),
        migrations.RunPython(create_search_index, drop_search_index),
    ]
