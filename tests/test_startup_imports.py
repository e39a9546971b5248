"""What every process pays at start: Django's setup (the web server, each worker, each
manage.py command) leaves scipy unimported; scipy.stats alone cost about 3 s of CPU, in
each of them, while few ever compute a figure."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings

from evidence_app.trust import stats


def _fresh_process(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a new Python process in the project's folder."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "project.settings"}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


def test_django_setup_and_the_celery_app_do_not_import_scipy() -> None:
    """Issue "Same result on every machine" (CI time): a fresh process that sets Django up
    and loads the Celery app (what a worker does) has not imported scipy; computing a
    figure does."""
    code = (
        "import django, sys; django.setup(); import project.celery, evidence_app.trust.rates; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy'})); "
        "from evidence_app.trust import stats; stats.clopper_pearson(1, 10); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy'}))"
    )
    result = _fresh_process(code)
    assert result.stdout.split("\n")[:2] == ["[]", "['scipy']"], result.stdout + result.stderr


def test_the_lazy_quantiles_are_scipy_stats_own() -> None:
    """The interval's bounds from scipy.special equal scipy.stats' beta quantiles (to the
    last bits of a float)."""
    from scipy.stats import beta

    for k, n in ((0, 7), (3, 40), (12, 12), (5, 1000)):
        interval = stats.clopper_pearson(k, n)
        low = float(beta.ppf(0.025, k, n - k + 1)) if k else 0.0
        high = float(beta.ppf(0.975, k + 1, n - k)) if k < n else 1.0
        assert interval.low == pytest.approx(low, rel=1e-12, abs=1e-15), (k, n)
        assert interval.high == pytest.approx(high, rel=1e-12, abs=1e-15), (k, n)


def test_a_web_process_compiles_its_page_templates_before_its_first_request() -> None:
    """Issue 48 (the task page's first response): loading ``project.wsgi`` (what gunicorn
    and the dev server do before serving) imports the URL map and compiles every page
    template, so the first request does neither; a fresh process that only sets Django
    up has done neither."""
    code = (
        "import django, sys; django.setup(); from django.template import engines; "
        "cache = engines['django'].engine.template_loaders[0].get_template_cache; "
        "print(len(cache), int('project.urls' in sys.modules)); import project.wsgi; "
        "print(len(cache), int('project.urls' in sys.modules))"
    )
    result = _fresh_process(code)
    before, urls_before, after, urls_after = (int(n) for n in result.stdout.split())
    pages = list((settings.BASE_DIR / "templates").rglob("*.html"))
    assert (before, urls_before) == (0, 0)
    assert after >= len(pages) > 50
    assert urls_after == 1


def test_web_and_worker_processes_freeze_what_they_made_while_starting() -> None:
    """Issue 48 (worker CPU): a web process, once ``project.wsgi`` is loaded, and a worker,
    once Celery says it started (``worker_process_init`` in a prefork child; the threads
    pool's process gets ``worker_ready``), have moved their startup objects out of the
    collector's generations; a process that only set Django up has not."""
    code = (
        "import gc, django; django.setup(); import project.celery; "
        "print(gc.get_freeze_count()); "
        "from celery import signals; signals.worker_process_init.send(sender=None); "
        "print(gc.get_freeze_count()); print(len(gc.get_objects(generation=2)))"
    )
    before, frozen, left = map(int, _fresh_process(code).stdout.split())
    assert before < 1_000 < 100_000 < frozen, (before, frozen)
    assert left < frozen / 10
    web = _fresh_process("import gc, project.wsgi; print(gc.get_freeze_count())")
    assert int(web.stdout.split()[-1]) > 100_000, web.stdout + web.stderr
