from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_wsgi_application()

# Compile the page templates now, not on the first request (project/warmup.py).
from project.warmup import compile_templates  # noqa: E402

compile_templates()
