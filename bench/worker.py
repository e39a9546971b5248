"""Celery entry module of the bench worker: ``celery -A bench.worker worker ...``.

It is the project's Celery app (the real jobs, the real settings from the environment)
plus the bench models registered in this process and a ``bench.noop`` job, the
baseline round trip. The result backend (the broker's Redis) is enabled only here and
only the no-op job stores a result.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

import django  # noqa: E402

django.setup()

from bench.models import register_bench_models  # noqa: E402
from project.celery import app  # noqa: E402

register_bench_models()

_backend = os.environ.get("BENCH_RESULT_BACKEND", "")
if _backend:
    app.conf.result_backend = _backend


@app.task(name="bench.noop", ignore_result=False)
def noop() -> float:
    """Does nothing; returns the wall clock when it ran (the round trip's far end)."""
    return time.time()
