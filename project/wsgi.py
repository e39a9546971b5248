from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
application = get_wsgi_application()

# Import the URL map and compile the page templates now, not on the first request
# (project/warmup.py).
from project.warmup import warm_up  # noqa: E402

warm_up()
