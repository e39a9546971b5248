"""The tasks app's API routers, one module per job: tasks (create, list, feedback,
claims, events), runs (runs and transcripts), documents (the knowledge base), external
(external agents' attempts and webhooks), otlp (OpenTelemetry traces)."""
