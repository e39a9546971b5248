"""Evidentia settings.

Every value comes from the environment with an explicit default; a bad value fails
loudly with ``ImproperlyConfigured``. The defaults are the embedded mode used by
``make run``: SQLite in WAL mode, kombu's filesystem broker, offline models.
"""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("EVIDENTIA_VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be >= {minimum}")
    return value


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be >= {minimum}")
    return value


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


def env_json_dict(name: str, default: dict[str, int]) -> dict[str, int]:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ImproperlyConfigured(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict) or not all(isinstance(v, int) for v in value.values()):
        raise ImproperlyConfigured(f"{name} must be a JSON object of model name -> integer")
    return value


# --- Core -------------------------------------------------------------------------------
DEBUG = env_bool("DEBUG", True)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "dev-only-insecure-key-do-not-use-in-production"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "django_htmx",
    "ninja",
    # Login throttling: failed logins counted in the database, admin unlock.
    "axes",
    "tasks_app",
    "evidence_app",
]

MIDDLEWARE = [
    # /health, /ready, /metrics answered before host, session or auth checks.
    "project.probes.ProbeMiddleware",
    # Every later log line of the request carries its request id.
    "project.logs.RequestContextMiddleware",
    # A database that cannot be reached answers 503 + Retry-After, not 500.
    "project.middleware.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "project.middleware.RequestTooLargeMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # A method an API address does not take: 405 in the API's JSON error shape.
    "project.middleware.ApiMethodNotAllowedMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # no-store on the API and on every page a signed-in person sees.
    "project.middleware.PrivateResponsesMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Turns a refused login (too many failures) into the lockout page; last, as axes asks.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tasks_app.accounts.context_processors.roles",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------------------
DEFAULT_SQLITE_PATH = VAR_DIR / "evidentia.sqlite3"
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{DEFAULT_SQLITE_PATH}")
try:
    _db = dj_database_url.parse(
        DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0), conn_health_checks=True
    )
except Exception as exc:  # dj-database-url raises several types for a bad URL
    raise ImproperlyConfigured(f"DATABASE_URL={DATABASE_URL!r} is not usable: {exc}") from None
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server read while the worker writes; IMMEDIATE avoids the
    # "database is locked" upgrade deadlock between two writers.
    _db["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
# A pool of PostgreSQL connections per process (psycopg_pool through Django's "pool"
# option): a worker with 200 threads shares DB_POOL_MAX_SIZE connections, because a job
# gives its connection back while it waits on a model (project.db.release_connection).
# 0 disables it (one connection per thread, kept DB_CONN_MAX_AGE seconds).
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 0, minimum=0)
DB_POOL_MIN_SIZE = env_int("DB_POOL_MIN_SIZE", min(2, DB_POOL_MAX_SIZE), minimum=0)
DB_POOL_TIMEOUT = env_float("DB_POOL_TIMEOUT", 30.0, minimum=0.1)
if DB_POOL_MAX_SIZE:
    if _db["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(
            "DB_POOL_MAX_SIZE needs PostgreSQL (DATABASE_URL=postgres://...)"
        )
    if _db.get("CONN_MAX_AGE"):
        raise ImproperlyConfigured("DB_POOL_MAX_SIZE and DB_CONN_MAX_AGE exclude each other")
    if DB_POOL_MIN_SIZE > DB_POOL_MAX_SIZE:
        raise ImproperlyConfigured("DB_POOL_MIN_SIZE must not exceed DB_POOL_MAX_SIZE")
    from psycopg_pool import ConnectionPool

    _db.setdefault("OPTIONS", {})["pool"] = {
        "min_size": DB_POOL_MIN_SIZE,
        "max_size": DB_POOL_MAX_SIZE,
        "timeout": DB_POOL_TIMEOUT,
        # A connection the server dropped (a restart, a terminated backend) is replaced
        # when taken from the pool, not handed to a request that would fail.
        "check": ConnectionPool.check_connection,
    }
_db["TEST"] = {"NAME": os.environ.get("TEST_DATABASE_NAME") or None}
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth, i18n, static -----------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# AxesBackend first: it refuses a locked-out login before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"
LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"

# Request bodies above this get 413. Django's own limit raises RequestDataTooBig.
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 5 * 1024 * 1024, minimum=1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES
# JSON a client sends (API bodies, and OTLP attributes that hold JSON text) may nest this
# deep; deeper gets 422 (API) or stays text (OTLP attribute) (docs/api.md "Bad input").
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 64, minimum=8)

# --- Security (production) --------------------------------------------------------------
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
# Off in development (make run serves plain http on 127.0.0.1). Behind a TLS-terminating
# proxy set TRUST_X_FORWARDED_PROTO=1, or the redirect loops.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("TRUST_X_FORWARDED_PROTO", False) else None
)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy (Django's ContentSecurityPolicyMiddleware), in every mode: only
# our own scripts (htmx and app.js are static files; no inline script, no eval), no
# plugins, no framing, forms and fetches back to us only. Inline style *attributes* are
# allowed (a few layout tweaks and chart colours); markup itself is always escaped.
SECURE_CSP = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    # The nonce covers the admin's one inline <style> (change lists).
    "style-src": ["'self'", CSP.NONCE],
    "style-src-attr": ["'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'none'"],
    "frame-ancestors": ["'none'"],
    "form-action": ["'self'"],
}

# --- Login throttling (django-axes; docs/operations.md "Locked-out accounts") -----------
# After LOGIN_FAILURE_LIMIT failed logins (the login page and /admin/login/ alike) the
# account is refused from every address, and the client address is refused for every
# account, for LOGIN_COOLOFF_SECONDS after the last failure (429 and the lockout page);
# a failure during the lockout starts the cool-off again, and failures are forgotten that
# long after the last one. A successful login does not clear them: with the address
# counted, a login to the attacker's own account would wipe the failures against others.
# An administrator unlocks at once: Admin > Axes > Access attempts (delete the rows) or
# manage.py axes_reset_username NAME / axes_reset_ip ADDRESS. The API's bearer tokens are
# not passwords and are not counted.
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
LOGIN_COOLOFF_SECONDS = env_int("LOGIN_COOLOFF_SECONDS", 900, minimum=1)
# What is counted: "username" (an account, whatever the address), "ip_address" (an
# address, whatever the account), or "username+ip_address" (the pair only), comma-separated.
LOGIN_LOCKOUT_BY = env_list("LOGIN_LOCKOUT_BY", "username,ip_address")
# How many reverse proxies that append to X-Forwarded-For stand in front of the app: 0 (the
# default, as make run and gunicorn on its own) counts REMOTE_ADDR; with N the client is
# the Nth address from the right of X-Forwarded-For (what the nearest trusted proxy saw),
# so a client cannot choose its address by sending the header itself.
LOGIN_TRUSTED_PROXY_COUNT = env_int("LOGIN_TRUSTED_PROXY_COUNT", 0, minimum=0)


def _lockout_parameters(items: list[str]) -> list[str | list[str]]:
    known = {"username", "ip_address"}
    parameters: list[str | list[str]] = []
    for item in items:
        parts = [part.strip() for part in item.split("+")]
        if not parts or not set(parts) <= known:
            raise ImproperlyConfigured(
                f"LOGIN_LOCKOUT_BY item {item!r}: use username, ip_address or username+ip_address"
            )
        parameters.append(parts[0] if len(parts) == 1 else parts)
    if not parameters:
        raise ImproperlyConfigured("LOGIN_LOCKOUT_BY must name at least one parameter")
    return parameters


AXES_ENABLED = env_bool("LOGIN_THROTTLE_ENABLED", True)
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(seconds=LOGIN_COOLOFF_SECONDS)
AXES_LOCKOUT_PARAMETERS = _lockout_parameters(LOGIN_LOCKOUT_BY)
AXES_RESET_ON_SUCCESS = False
AXES_CLIENT_IP_CALLABLE = "project.login_throttle.client_address"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
# No "AXES: BEGIN" line from every process and management command at start-up; the
# lockout lines still name the account and address counted.
AXES_VERBOSE = False

# --- Celery -----------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_FOLDER = Path(env_str("CELERY_BROKER_FOLDER", str(VAR_DIR / "broker")))
# A job must never outlive the broker's redelivery window, or a slow job would be
# delivered twice while still running (see NOTES: Redis visibility_timeout).
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 1800, minimum=10)
CELERY_VISIBILITY_TIMEOUT = env_int(
    "CELERY_VISIBILITY_TIMEOUT", CELERY_TASK_TIME_LIMIT + 600, minimum=1
)
if CELERY_VISIBILITY_TIMEOUT <= CELERY_TASK_TIME_LIMIT:
    raise ImproperlyConfigured(
        "CELERY_VISIBILITY_TIMEOUT must be longer than CELERY_TASK_TIME_LIMIT, "
        "or a running job is redelivered to a second worker"
    )
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
# Queue for jobs sent without an explicit queue (a worker must consume it); tests that
# share a broker give their worker a queue of its own.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")
# Jobs are routed to a queue per purpose (project/celery.py: attempts, validation,
# webhooks, maintenance), so finishing work never waits behind starting work and the
# reaper runs on time. The prefix namespaces them, e.g. for tests sharing one Redis.
CELERY_QUEUE_PREFIX = env_str("CELERY_QUEUE_PREFIX", "")
if not re.fullmatch(r"[A-Za-z0-9_.:-]*", CELERY_QUEUE_PREFIX):
    raise ImproperlyConfigured(
        f"CELERY_QUEUE_PREFIX={CELERY_QUEUE_PREFIX!r}: use letters, digits and _ . : - only"
    )
# Queues some worker must consume: /ready and manage.py check_health require a live worker
# on each, beat sends the heartbeat job to each, /metrics reports each one's depth. Empty
# (the default): every queue of project/celery.py (the default queue and one per purpose).
WORKER_QUEUES = env_list("WORKER_QUEUES", "")

# --- Agents and models ------------------------------------------------------------------
AGENT_MODEL = env_str("AGENT_MODEL", "offline:researcher")
VALIDATOR_MODEL = env_str("VALIDATOR_MODEL", "offline:judge")
# The embedded judge's entailment model: a folder holding entailment.onnx and
# tokenizer.json (default: the model shipped with the app, evidence_app/offline_judge/model).
# Off: the embedded judge reads words only, as before the model (no inference, no memory
# for it); what the benchmark sets beside the model's figures.
OFFLINE_JUDGE_READS_MEANING = env_bool("OFFLINE_JUDGE_READS_MEANING", True)
OFFLINE_JUDGE_MODEL_DIR = Path(
    env_str("OFFLINE_JUDGE_MODEL_DIR", str(BASE_DIR / "evidence_app" / "offline_judge" / "model"))
)
# For OpenAI-compatible servers (Ollama, vLLM, llama.cpp) named "compat:<model>".
OPENAI_COMPAT_BASE_URL = env_str("OPENAI_COMPAT_BASE_URL", "http://127.0.0.1:11434/v1")
OPENAI_COMPAT_API_KEY = env_str("OPENAI_COMPAT_API_KEY", "not-needed")
MODEL_TIMEOUT_SECONDS = env_float("MODEL_TIMEOUT_SECONDS", 120.0, minimum=1)
MODEL_MAX_RETRIES = env_int("MODEL_MAX_RETRIES", 3, minimum=0)
MODEL_RETRY_BASE_DELAY_SECONDS = env_float("MODEL_RETRY_BASE_DELAY_SECONDS", 1.0, minimum=0)
MAX_TOOL_ITERATIONS = env_int("MAX_TOOL_ITERATIONS", 6, minimum=0)
MAX_PARALLEL_TEAM_NODES = env_int("MAX_PARALLEL_TEAM_NODES", 3, minimum=1)
MAX_ATTEMPTS = env_int("MAX_ATTEMPTS", 2, minimum=1)
LLM_FULL_REQUEST_SNAPSHOTS = env_bool("LLM_FULL_REQUEST_SNAPSHOTS", False)
# The attempt's heartbeat thread beats every lease/3 even during a model call, so a
# short lease is safe and a crashed worker's attempt is back within seconds.
ATTEMPT_LEASE_SECONDS = env_int("ATTEMPT_LEASE_SECONDS", 30, minimum=5)
# Re-runs of a task's attempt after its worker died (a takeover or the reaper), counted
# apart from MAX_ATTEMPTS (two budgets); then the task fails with the reason.
ATTEMPT_MAX_REQUEUES = env_int("ATTEMPT_MAX_REQUEUES", 3, minimum=0)
REAPER_INTERVAL_SECONDS = env_int("REAPER_INTERVAL_SECONDS", 15, minimum=1)
# Jobs recorded while the broker was down are published this often.
OUTBOX_RELAY_INTERVAL_SECONDS = env_int("OUTBOX_RELAY_INTERVAL_SECONDS", 5, minimum=1)

# --- Tools ------------------------------------------------------------------------------
FETCH_URL_ALLOW_PRIVATE = env_bool("FETCH_URL_ALLOW_PRIVATE", False)
FETCH_URL_MAX_BYTES = env_int("FETCH_URL_MAX_BYTES", 2 * 1024 * 1024, minimum=1024)
FETCH_URL_TIMEOUT_SECONDS = env_float("FETCH_URL_TIMEOUT_SECONDS", 10.0, minimum=0.1)

# --- Validation -------------------------------------------------------------------------
VALIDATION_STORE_PROMPT = env_bool("VALIDATION_STORE_PROMPT", True)
VALIDATOR_SCHEMA_RETRIES = env_int("VALIDATOR_SCHEMA_RETRIES", 2, minimum=0)
# The validator's output limit (tokens): a verdict's allowance (per claim) and the one
# retry of a verdict the provider cut stay within it.
VALIDATOR_MAX_OUTPUT_TOKENS = env_int("VALIDATOR_MAX_OUTPUT_TOKENS", 16_384, minimum=256)
VALIDATOR_HISTORY_MESSAGES = env_int("VALIDATOR_HISTORY_MESSAGES", 30, minimum=0)
# Context budget per validator model, in characters of rendered input; the default
# applies to models not named. Over budget, evidence is judged in ordered chunks.
VALIDATOR_CONTEXT_CHARS = env_json_dict("VALIDATOR_CONTEXT_CHARS", {})
VALIDATOR_DEFAULT_CONTEXT_CHARS = env_int("VALIDATOR_DEFAULT_CONTEXT_CHARS", 400_000, minimum=1000)
# A second validator model judging the same rendered input ("" : none). When the two
# disagree on accepted versus not, a person decides; per task: second_model.
VALIDATOR_SECOND_MODEL = env_str("VALIDATOR_SECOND_MODEL", "")
REPLAY_BULK_MAX_TASKS = env_int("REPLAY_BULK_MAX_TASKS", 50, minimum=1)
# A job that crashes the same way every time (a poison job) stops after this many tries:
# a validation then goes to a person with the error, a replay says "failed".
JOB_MAX_TRIES = env_int("JOB_MAX_TRIES", 3, minimum=1)

# --- Review UI --------------------------------------------------------------------------
REVIEW_CLAIM_TIMEOUT_SECONDS = env_int("REVIEW_CLAIM_TIMEOUT_SECONDS", 900, minimum=10)
# How long a decision (satisfied, revise, abandon) can be undone before it applies; 0
# applies it at once.
DECISION_UNDO_SECONDS = env_int("DECISION_UNDO_SECONDS", 30, minimum=0)
# --- Measuring trust -----------------------------------------------------------
# The share of auto-accepted verdicts (and of auto-rejected ones) drawn, when the verdict
# is stored, for a blind audit by a person; per task: audit_rate, audit_reject_rate. They
# are also the floor: a requester may raise a task's rate, never lower it; only
# an operator may, and the exception is recorded (who, when, why).
AUDIT_RATE = env_float("AUDIT_RATE", 0.05, minimum=0)
AUDIT_REJECT_RATE = env_float("AUDIT_REJECT_RATE", 0.02, minimum=0)
for _name in ("AUDIT_RATE", "AUDIT_REJECT_RATE"):
    if globals()[_name] > 1:
        raise ImproperlyConfigured(f"{_name} is a share between 0 and 1")
# The false-accept rate the operator pages hold the 95 % upper bound against.
TRUST_TARGET_FALSE_ACCEPT = env_float("TRUST_TARGET_FALSE_ACCEPT", 0.02, minimum=0)
if TRUST_TARGET_FALSE_ACCEPT >= 0.5:
    raise ImproperlyConfigured("TRUST_TARGET_FALSE_ACCEPT is a share under 0.5")
# Auto-accept at a certified risk: how often the background job recertifies
# each judge's threshold and checks its drift, and how long a proposed threshold runs in
# shadow before an operator may approve it.
AUTOACCEPT_RECOMPUTE_SECONDS = env_int("AUTOACCEPT_RECOMPUTE_SECONDS", 600, minimum=10)
AUTOACCEPT_SHADOW_HOURS = env_float("AUTOACCEPT_SHADOW_HOURS", 24.0, minimum=0)
# What a judge without an approved, unstopped threshold may do with an accepted verdict:
# "auto-accept" (send it to the requester as the judge says, marked not certified) or
# "certified-only" (send it to a person: only a certified judge accepts alone).
AUTOACCEPT_UNCERTIFIED = env_str("AUTOACCEPT_UNCERTIFIED", "auto-accept")
if AUTOACCEPT_UNCERTIFIED not in ("auto-accept", "certified-only"):
    raise ImproperlyConfigured(
        f"AUTOACCEPT_UNCERTIFIED={AUTOACCEPT_UNCERTIFIED!r}: use auto-accept or certified-only"
    )
UI_LAZY_SECTION_CHARS = env_int("UI_LAZY_SECTION_CHARS", 20_000, minimum=100)


def _not_kombu_hostname_notice(record: object) -> bool:
    """kombu warns "No hostname was supplied" for every connection to a URL without a
    host; the ``filesystem://`` broker of the embedded mode has none and needs none."""
    return not str(getattr(record, "msg", "")).startswith("No hostname was supplied")


# --- Operations: health, metrics, logs ----------------------------------------
# Workers write a heartbeat row this often; beat sends a heartbeat job to every queue
# this often. A worker (beat) not seen for *_MAX_AGE seconds counts as down in /ready.
OPS_HEARTBEAT_SECONDS = env_int("OPS_HEARTBEAT_SECONDS", 15, minimum=1)
OPS_WORKER_MAX_AGE_SECONDS = env_int("OPS_WORKER_MAX_AGE_SECONDS", 60, minimum=2)
OPS_BEAT_MAX_AGE_SECONDS = env_int("OPS_BEAT_MAX_AGE_SECONDS", 120, minimum=2)
for _name in ("OPS_WORKER_MAX_AGE_SECONDS", "OPS_BEAT_MAX_AGE_SECONDS"):
    if globals()[_name] <= OPS_HEARTBEAT_SECONDS:
        raise ImproperlyConfigured(
            f"{_name} must be longer than OPS_HEARTBEAT_SECONDS, or a live process looks dead"
        )
# /ready's own deadline per dependency (database, broker).
OPS_CHECK_TIMEOUT_SECONDS = env_float("OPS_CHECK_TIMEOUT_SECONDS", 3.0, minimum=0.1)
# Beat is optional in some deployments (e.g. an external scheduler): 0 leaves it out.
OPS_REQUIRE_BEAT = env_bool("OPS_REQUIRE_BEAT", True)
# /metrics: with METRICS_TOKEN set, only "Authorization: Bearer <METRICS_TOKEN>" is served
# (any address); without a token, a request from one of METRICS_ALLOWED_NETWORKS (CIDRs;
# the direct peer address, never X-Forwarded-For). Everything else gets 403. The token
# also shows /ready's check details.
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
METRICS_ALLOWED_NETWORKS = env_list("METRICS_ALLOWED_NETWORKS", "127.0.0.1/32,::1/128")
try:
    import ipaddress as _ipaddress

    METRICS_NETWORKS = [_ipaddress.ip_network(n, strict=False) for n in METRICS_ALLOWED_NETWORKS]
except ValueError as exc:
    raise ImproperlyConfigured(f"METRICS_ALLOWED_NETWORKS: {exc}") from None
# Counters are read from append-only tables; rows younger than this are left to the next
# scrape so a transaction that commits late is not skipped (docs/operations.md).
METRICS_SETTLE_SECONDS = env_int("METRICS_SETTLE_SECONDS", 10, minimum=0)

# LOG_FORMAT=json: one JSON object per line with task id, attempt, job id and request id.
LOG_FORMAT = env_str("LOG_FORMAT", "text").strip().lower()
if LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r} must be 'text' or 'json'")
LOG_LEVEL = env_str("LOG_LEVEL", "INFO")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "kombu_hostname": {
            "()": "django.utils.log.CallbackFilter",
            "callback": _not_kombu_hostname_notice,
        },
        "context": {"()": "project.logs.ContextFilter"},
        # Celery's per-job INFO lines about periodic jobs are DEBUG (docs/operations.md).
        "quiet_periodic_jobs": {"()": "project.logs.QuietPeriodicJobs"},
    },
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s%(context)s: %(message)s"},
        "json": {"()": "project.logs.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["context"],
            "formatter": LOG_FORMAT,
        }
    },
    "loggers": {
        "kombu.connection": {"filters": ["kombu_hostname"]},
        # httpx logs every request line with the full URL at INFO: a webhook receiver's URL
        # (or a fetched page's) may carry a secret in its query string.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        **{
            name: {"filters": ["quiet_periodic_jobs"]}
            for name in ("celery.beat", "celery.worker.strategy", "celery.app.trace")
        },
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
}

# --- OpenTelemetry ingestion (docs/otlp.md) ---------------------------------------------
# The OTLP/HTTP body limit, compressed and inflated alike (413 above it, nothing stored).
OTLP_MAX_BODY_BYTES = env_int("OTLP_MAX_BODY_BYTES", 16 * 1024 * 1024, minimum=1024)
# A trace becomes an attempt this long after its last span, once its root span arrived
# (at once when the root carries evidentia.final = true).
OTLP_TRACE_QUIET_SECONDS = env_float("OTLP_TRACE_QUIET_SECONDS", 5.0, minimum=0.0)
# A trace whose root span never arrives is assembled from what it has after this long.
OTLP_TRACE_MAX_WAIT_SECONDS = env_float("OTLP_TRACE_MAX_WAIT_SECONDS", 600.0, minimum=1.0)
# The exporter's attribute value length limit (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT), if it
# sets one: a tool result exactly this long is flagged as truncated at the source. 0: none.
OTLP_SOURCE_VALUE_LENGTH_LIMIT = env_int("OTLP_SOURCE_VALUE_LENGTH_LIMIT", 0, minimum=0) or None
# Spans one account may send per minute; above it the endpoint answers 429 + Retry-After.
OTLP_MAX_SPANS_PER_MINUTE = env_int("OTLP_MAX_SPANS_PER_MINUTE", 120_000, minimum=1)
# A trace whose assembly fails (an error, not an unusable trace) is tried again after
# OTLP_TRACE_RETRY_SECONDS, at most OTLP_TRACE_ASSEMBLY_ATTEMPTS times in all, then marked
# unusable with the reason; the sweep takes due traces a few per account at a time.
OTLP_TRACE_ASSEMBLY_ATTEMPTS = env_int("OTLP_TRACE_ASSEMBLY_ATTEMPTS", 3, minimum=1)
OTLP_TRACE_RETRY_SECONDS = env_float("OTLP_TRACE_RETRY_SECONDS", 30.0, minimum=0.0)
# --- External agents and webhooks ---------------------------------------------
# Largest body of an external attempt submission (after gzip decompression too): 413 above.
EXTERNAL_ATTEMPT_MAX_BYTES = env_int("EXTERNAL_ATTEMPT_MAX_BYTES", 64 * 1024 * 1024, minimum=1024)
# Where an external attempt whose agent stopped heartbeating goes: back to "open" (the agent
# may submit again; at most ATTEMPT_MAX_REQUEUES times, then failed) or straight to "failed".
EXTERNAL_ATTEMPT_STALE_ACTION = env_str("EXTERNAL_ATTEMPT_STALE_ACTION", "open")
if EXTERNAL_ATTEMPT_STALE_ACTION not in {"open", "failed"}:
    raise ImproperlyConfigured(
        f"EXTERNAL_ATTEMPT_STALE_ACTION={EXTERNAL_ATTEMPT_STALE_ACTION!r} must be open or failed"
    )
# How long a response stored for an Idempotency-Key is replayed.
IDEMPOTENCY_KEY_TTL_SECONDS = env_int("IDEMPOTENCY_KEY_TTL_SECONDS", 24 * 3600, minimum=60)
# How long a request waits for a concurrent one with the same Idempotency-Key before it
# answers 409 idempotency_key_in_use.
IDEMPOTENCY_IN_FLIGHT_WAIT_SECONDS = env_int("IDEMPOTENCY_IN_FLIGHT_WAIT_SECONDS", 10, minimum=1)
# Webhook URLs on private, loopback or link-local addresses are refused unless this is on.
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", False)
WEBHOOK_TIMEOUT_SECONDS = env_float("WEBHOOK_TIMEOUT_SECONDS", 10.0, minimum=0.1)
# Retries: exponential backoff from the base delay, capped, with jitter; a delivery is
# given up only when an attempt fails after the window (counted from the event) ended.
WEBHOOK_RETRY_BASE_SECONDS = env_float("WEBHOOK_RETRY_BASE_SECONDS", 10.0, minimum=0.01)
WEBHOOK_RETRY_MAX_SECONDS = env_float("WEBHOOK_RETRY_MAX_SECONDS", 3600.0, minimum=0.01)
WEBHOOK_RETRY_WINDOW_SECONDS = env_int("WEBHOOK_RETRY_WINDOW_SECONDS", 24 * 3600, minimum=1)
# The periodic job that sends deliveries whose job was lost (broker down, worker killed).
WEBHOOK_SWEEP_INTERVAL_SECONDS = env_int("WEBHOOK_SWEEP_INTERVAL_SECONDS", 60, minimum=1)
