"""The full-text index of 0002 indexed to_tsvector(title || ' ' || body), but
search_knowledge matches the weighted vector below: PostgreSQL can use an expression
index only for the very same expression, so every search read every document. This
index is that expression (X8); tests/tasks_app/test_search_index.py checks EXPLAIN."""

from django.db import migrations

SEARCH_INDEX_SQL = (
    "CREATE INDEX IF NOT EXISTS knowledgedocument_search ON tasks_app_knowledgedocument "
    "USING gin ((setweight(to_tsvector('english'::regconfig, COALESCE(title, '')), 'A') || "
    "setweight(to_tsvector('english'::regconfig, COALESCE(body, '')), 'B')))"
)
OLD_INDEX_SQL = (
    "CREATE INDEX IF NOT EXISTS knowledgedocument_fts ON tasks_app_knowledgedocument "
    "USING gin (to_tsvector('english', coalesce(title, '') || ' ' || coalesce(body, '')))"
)


def replace_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS knowledgedocument_fts")
        schema_editor.execute(SEARCH_INDEX_SQL)


def restore_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS knowledgedocument_search")
        schema_editor.execute(OLD_INDEX_SQL)


class Migration(migrations.Migration):
    dependencies = [("tasks_app", "0003_job_id_and_validation_claim")]

    operations = [migrations.RunPython(replace_index, restore_index)]
