"""The one settings module. Every deployment difference comes from the environment.

`.env.example` documents each variable. Nothing secret has a default that works in production:
with DEBUG off, a SECRET_KEY or FIELD_ENCRYPTION_KEY that is neither in the environment nor kept
in VAR_DIR (where `make run` generates them, inbox/site/local_secrets.py) stops the process at
start. DEBUG is off unless DEBUG=1: `make run` serves the same error pages, security headers and
Content-Security-Policy as production, over plain http on 127.0.0.1 (docs/security.md).

It is one long module on purpose: it is where an operator reads what each variable does, with
its default and its reason beside it, in sections (database, Redis, Celery, debounce, auth and
security, static and media, WhatsApp, LLM, metrics, speech, logging). Later sections read
earlier values (REDIS_URL feeds the channel layer, the cache and Celery's broker; DEBUG and
TESTING set the HTTPS and logging defaults), which one file keeps in reading order; split into
modules, the same names would come back through star imports. Code that runs at start (the
generated secrets) lives in inbox/site/local_secrets.py, not here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from inbox.site.local_secrets import (
    FIELD_ENCRYPTION_KEY_FILE,
    SECRET_KEY_FILE,
    ensure_secret,
    read_secret,
)

BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    return float(raw) if raw else default


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG")
TESTING = env_bool("TESTING")


def _secret(env_name: str, filename: str) -> str:
    """The secret from the environment, else the one this install keeps in VAR_DIR (`make run`
    creates it; DEBUG and the tests create it when missing): `python manage.py …` by hand uses
    the same keys as the running stack. Without either, a process with DEBUG off refuses to
    start rather than invent a key nobody kept."""
    value = env_str(env_name) or read_secret(VAR_DIR, filename)
    if value:
        return value
    if not (DEBUG or TESTING):
        raise ImproperlyConfigured(
            f"{env_name} must be set when DEBUG is off (or kept in {VAR_DIR / filename}, which "
            "`make run` creates)."
            + (
                " Generate one with: python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'"
                if env_name == "FIELD_ENCRYPTION_KEY"
                else ""
            )
        )
    return ensure_secret(VAR_DIR, filename)


SECRET_KEY = _secret("SECRET_KEY", SECRET_KEY_FILE)

# Encrypts credentials stored in the database (channel tokens, CRM webhook URLs).
# A comma-separated list: the first key encrypts, all keys decrypt (key rotation).
FIELD_ENCRYPTION_KEYS = [
    key.strip()
    for key in _secret("FIELD_ENCRYPTION_KEY", FIELD_ENCRYPTION_KEY_FILE).split(",")
    if key.strip()
]

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
# Absolute URL of this inbox, used in links written to outside systems (CRM timeline entries).
PUBLIC_BASE_URL = env_str("PUBLIC_BASE_URL", "http://127.0.0.1:8000").rstrip("/")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "inbox.conversations",
    "inbox.upkeep",
    "assistant",
    "inbox.web",
    "integrations.bitrix24",
    # Last: its ready() wires the packages together (inbox/site/apps.py).
    "inbox.site",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "inbox.site.security_headers.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "inbox.web.local_time.BusinessTimeMiddleware",
    "inbox.web.local_language.MemberLanguageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "inbox.site.urls"
ASGI_APPLICATION = "inbox.site.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
    {
        # The chat row and the message: rendered per push and 50 to a page (inbox/web/jinja.py).
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [BASE_DIR / "jinja_templates"],
        "APP_DIRS": False,
        "OPTIONS": {"environment": "inbox.web.jinja.environment"},
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}"
DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Several processes (web, workers) share one file: wait for locks instead of failing, and
    # keep the test database on disk so worker processes see what a test committed.
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}
else:
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis: dedup, debounce, breaker, limiter, bot-sent ids, Celery broker, channel layer ---
REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")

CHANNEL_LAYERS = {
    "default": {
        # The pub/sub layer: the default core layer drops most of a burst (see docs/).
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": env_str("CHANNEL_LAYER_PREFIX", "inbox")},
    }
}

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "cache",
    }
}

# --- Celery ---------------------------------------------------------------------------------
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fixup closes the database connection around every task, unless this is set;
# then it closes it every this many tasks, and `inbox/site/celery.py` applies Django's own
# rule (CONN_MAX_AGE, CONN_HEALTH_CHECKS) around each task instead.
CELERY_DB_REUSE_MAX = 1000
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A task whose worker died is handed to another worker after this many seconds.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 300),
    # How often each worker looks for such tasks. kombu 5.7 scans only on every 10th tick of
    # 10 s by default, which adds up to 100 s to the timeout above; scan on every tick.
    "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10),
    "unacked_restore_throttle": 1,
}
CELERY_WORKER_SEND_TASK_EVENTS = False
# --- Debounce timers (inbox/conversations/debounce/: timers.py, scheduler.py) ---------------
# Every Celery worker that consumes the assistant queue runs a scheduler loop on a thread;
# `manage.py debounce_scheduler` runs one on its own (then this may be off for the workers).
DEBOUNCE_SCHEDULER_IN_WORKERS = env_bool("DEBOUNCE_SCHEDULER_IN_WORKERS", True)
# A claimed chat whose scheduler died before publishing its turn is due again after this long.
DEBOUNCE_LEASE_SECONDS = env_float("DEBOUNCE_LEASE_SECONDS", 10.0)
# WhatsApp shows "typing…" for 25 s: a turn still composing shows it again this often.
TYPING_REFRESH_SECONDS = env_float("TYPING_REFRESH_SECONDS", 20.0)
# Longest sleep between a scheduler's passes (a new earliest timer wakes it at once anyway).
DEBOUNCE_IDLE_SECONDS = env_float("DEBOUNCE_IDLE_SECONDS", 1.0)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # keep our JSON, masked, correlated log format
CELERY_BEAT_SCHEDULE: dict[str, dict[str, object]] = {
    "release-idle-chats": {"task": "inbox.release_idle_chats", "schedule": 60.0},
    "resume-unanswered-chats": {"task": "inbox.resume_unanswered_chats", "schedule": 60.0},
    "settle-stuck-sends": {"task": "inbox.settle_stuck_sends", "schedule": 60.0},
    "wake-snoozed-chats": {"task": "inbox.wake_snoozed_chats", "schedule": 60.0},
    "expire-drafts": {"task": "inbox.expire_drafts", "schedule": 60.0},
    "send-followups": {"task": "inbox.send_followups", "schedule": 300.0},
    "resume-stuck-transcriptions": {
        "task": "inbox.resume_stuck_transcriptions",
        "schedule": 300.0,
    },
    # WhatsApp message templates of every Cloud API channel with a WABA id
    # (integrations/whatsapp/template_sync.py); status webhooks update them in between.
    "sync-message-templates": {
        "task": "whatsapp.sync_templates",
        "schedule": env_float("TEMPLATE_SYNC_SECONDS", 3600.0),
    },
}
CELERY_TIMEZONE = "UTC"

# --- Auth, sessions, security ---------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/inbox/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Every page: our own scripts, styles, images and media only, no inline script or style (the
# templates keep none; htmx is told not to inject its indicator style, templates/base.html), no
# eval, no framing, forms post only here. connect-src 'self' covers the page's websocket
# (/ws/inbox/) on the same host and port.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:", "blob:"],
        "media-src": [SELF, "blob:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}
# Browser features no page of the inbox uses.
PERMISSIONS_POLICY = "camera=(), microphone=(), geolocation=(), payment=(), usb=()"
# With DEBUG off the HTTPS settings default on (production behind TLS); `make run` serves plain
# http on 127.0.0.1 and sets SECURE_SSL_REDIRECT, SESSION_COOKIE_SECURE and CSRF_COOKIE_SECURE
# to 0 for its processes (inbox/site/stack.py).
if not DEBUG and not TESTING:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
    if not SECURE_HSTS_PRELOAD:
        # Preloading is a commitment for the whole domain, made by its owner (SECURE_HSTS_PRELOAD=1
        # then submit it to the browsers' list); not preloading is a choice, not a misconfiguration.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]

# --- i18n, static, media --------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
# The inbox's languages (docs/i18n.md): English is the source text; a member or business that
# chooses ru or kk reads locale/<code>/LC_MESSAGES/django.po (built by inbox/site/locale_build.py).
LANGUAGES = [("en", "English"), ("ru", "Русский"), ("kk", "Қазақша")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT") or VAR_DIR / "staticfiles")
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or VAR_DIR / "media")
MEDIA_URL = "/media/"  # never served publicly: media goes through permission-checked views
# Attachments (voice notes, images, documents) go to MEDIA_ROOT, or to an S3-compatible bucket
# when MEDIA_S3_BUCKET is set (pip install -e '.[s3]': django-storages + boto3). Files are
# never public: managers fetch them through /inbox/media/<id>/.
MEDIA_S3_BUCKET = env_str("MEDIA_S3_BUCKET")
STORAGES: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
if MEDIA_S3_BUCKET:
    STORAGES["default"] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": MEDIA_S3_BUCKET,
            "endpoint_url": env_str("MEDIA_S3_ENDPOINT_URL") or None,
            "region_name": env_str("MEDIA_S3_REGION") or None,
            "access_key": env_str("MEDIA_S3_ACCESS_KEY_ID") or None,
            "secret_key": env_str("MEDIA_S3_SECRET_ACCESS_KEY") or None,
            "location": env_str("MEDIA_S3_PREFIX", "media"),
            "default_acl": "private",
            "file_overwrite": False,
            "querystring_auth": True,
        },
    }
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 5 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# Most fields a form body may have, for every form parsed here: Django's own (request.POST and
# query strings) and the Bitrix24 event webhook's PHP-style body (PHP's `max_input_vars`). A body
# with more is a 400 before it is parsed.
FORM_MAX_FIELDS = env_int("FORM_MAX_FIELDS", 1000)
DATA_UPLOAD_MAX_NUMBER_FIELDS = FORM_MAX_FIELDS

# --- WhatsApp -------------------------------------------------------------------------------
WHATSAPP_GRAPH_URL = env_str("WHATSAPP_GRAPH_URL", "https://graph.facebook.com/v24.0").rstrip("/")
WHATSAPP_APP_SECRET = env_str("WHATSAPP_APP_SECRET")
WHATSAPP_VERIFY_TOKEN = env_str("WHATSAPP_VERIFY_TOKEN")
# How long the webhook keeps which channel a number or bridge is (a query saved per request).
WHATSAPP_ROUTE_CACHE_SECONDS = env_float("WHATSAPP_ROUTE_CACHE_SECONDS", 5.0)
# A known Cloud API number's expired route is still used this much longer while one refresh
# runs (integrations/whatsapp/webhooks.py RouteCache says why and what it never covers).
WHATSAPP_ROUTE_STALE_SECONDS = env_float("WHATSAPP_ROUTE_STALE_SECONDS", 60.0)
# Hosts (names or networks) outside the public internet that URLs typed by business admins may
# name: a bridge on this machine (127.0.0.1) or a private network (10.0.5.0/24). Anything else
# private, loopback or link-local is refused (inbox/platform/egress.py). The tests' emulators
# listen on 127.0.0.1.
OUTBOUND_ALLOWED_HOSTS = env_list(
    "OUTBOUND_ALLOWED_HOSTS", "127.0.0.1,localhost,::1" if TESTING else ""
)
# Largest attachment downloaded from a provider (the platform's own cap is 100 MB).
MEDIA_MAX_BYTES = env_int("MEDIA_MAX_BYTES", 64 * 1024 * 1024)
# Largest document a manager may send from the composer (WhatsApp allows 100 MB; images are
# held to WhatsApp's 5 MB). Keep nginx's client_max_body_size above it (deploy/nginx.conf).
MANAGER_ATTACHMENT_MAX_BYTES = env_int("MANAGER_ATTACHMENT_MAX_BYTES", 16 * 1024 * 1024)
# Longest text stored on an inbound message. WhatsApp lets a person send at most 65,536
# characters (the Cloud API's 4,096 is the limit of what a business sends); a longer text is
# cut here and kept whole as the message's attachment (inbox/conversations/ingest/).
INBOUND_TEXT_MAX_CHARS = env_int("INBOUND_TEXT_MAX_CHARS", 65_536)
# Largest webhook body accepted; Meta batches at most 1000 updates per POST.
WEBHOOK_MAX_BODY_BYTES = env_int("WEBHOOK_MAX_BODY_BYTES", 3 * 1024 * 1024)
# Largest Bitrix24 outbound-event body accepted (`/webhooks/bitrix24/`, anonymous until its
# token is read): an event carries ids and at most an operator's reply, a few KB.
BITRIX24_EVENT_MAX_BODY_BYTES = env_int("BITRIX24_EVENT_MAX_BODY_BYTES", 256 * 1024)

# --- LLM (an OpenAI-compatible server: vLLM in production) ----------------------------------
LLM_BASE_URL = env_str("LLM_BASE_URL")
LLM_MODEL = env_str("LLM_MODEL", "assistant")
LLM_API_KEY = env_str("LLM_API_KEY", "not-needed")
LLM_STRUCTURED_OUTPUT = env_str("LLM_STRUCTURED_OUTPUT", "json_schema")
LLM_TIMEOUT_SECONDS = env_float("LLM_TIMEOUT_SECONDS", 30.0)

# --- Metrics --------------------------------------------------------------------------------
# /metrics needs this bearer token; without one, only requests from these addresses.
METRICS_TOKEN = env_str("METRICS_TOKEN")
METRICS_ALLOWED_IPS = env_list("METRICS_ALLOWED_IPS", "127.0.0.1,::1")

# --- Speech-to-text (voice notes) ------------------------------------------------------------
# embedded: faster-whisper on this machine's CPU with weights shipped in pip packages (no
# download); openai: an OpenAI-compatible /v1/audio/transcriptions server (vLLM, others).
SPEECH_BACKEND = env_str("SPEECH_BACKEND", "embedded")
# embedded: base (multilingual), tiny.en (English only, faster) or a folder holding a
# CTranslate2 Whisper model; openai: the model name the server serves.
SPEECH_MODEL = env_str("SPEECH_MODEL")
SPEECH_BASE_URL = env_str("SPEECH_BASE_URL").rstrip("/")
SPEECH_API_KEY = env_str("SPEECH_API_KEY")
SPEECH_TIMEOUT_SECONDS = env_float("SPEECH_TIMEOUT_SECONDS", 120.0)
# Longer voice notes are not transcribed: the chat goes to a manager with the audio.
SPEECH_MAX_SECONDS = env_float("SPEECH_MAX_SECONDS", 300.0)
# CPU threads of one embedded transcription (0 = one per core, at most 4).
SPEECH_CPU_THREADS = env_int("SPEECH_CPU_THREADS", 0)
# Words the model itself gives a probability below this are highlighted for the manager.
SPEECH_LOW_WORD_PROBABILITY = env_float("SPEECH_LOW_WORD_PROBABILITY", 0.5)
# Where the embedded model is assembled from its pip packages once (default VAR_DIR/models).
SPEECH_MODEL_CACHE_DIR = Path(env_str("SPEECH_MODEL_CACHE_DIR") or VAR_DIR / "models")

# --- Logging --------------------------------------------------------------------------------
# JSON lines with a correlation id; phone numbers and message text masked
# (inbox/platform/logs.py).
LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOG_FORMAT = env_str("LOG_FORMAT", "plain" if DEBUG else "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "privacy": {"()": "inbox.platform.logs.PrivacyFilter"},
        "access_log": {"()": "inbox.platform.logs.AccessLogFilter"},
    },
    "formatters": {
        "json": {"()": "inbox.platform.logs.JsonLines"},
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(correlation_id)s] %(message)s"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": LOG_FORMAT,
            "filters": ["privacy"],
        },
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
        # The webhook server's access log (inbox/site/webhook_server.py): its request lines
        # masked as daphne's are (secrets in the query string, phone numbers once decoded).
        "uvicorn.access": {"filters": ["access_log"]},
        # httpx logs every request URL at INFO; CRM webhook URLs carry a secret.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}

# WhiteNoise serves static files straight from the apps in development (no collectstatic).
WHITENOISE_USE_FINDERS = DEBUG or TESTING

# --- Assistant: LLM client resilience, prompt budget (assistant/llm/client.py,
# assistant/llm/prompt.py) -- LLM_BASE_URL may list several replicas of one model, comma-separated:
# requests go to the one with the fewest requests in flight, each replica with its own circuit
# breaker.
LLM_FALLBACK_BASE_URL = env_str("LLM_FALLBACK_BASE_URL")
LLM_FALLBACK_MODEL = env_str("LLM_FALLBACK_MODEL") or LLM_MODEL
LLM_FALLBACK_API_KEY = env_str("LLM_FALLBACK_API_KEY") or LLM_API_KEY
LLM_FALLBACK_STRUCTURED_OUTPUT = env_str("LLM_FALLBACK_STRUCTURED_OUTPUT") or LLM_STRUCTURED_OUTPUT
LLM_CONNECT_TIMEOUT_SECONDS = env_float("LLM_CONNECT_TIMEOUT_SECONDS", 3.0)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 2)
LLM_RETRY_BACKOFF_SECONDS = env_float("LLM_RETRY_BACKOFF_SECONDS", 0.5)
# A 429's Retry-After is honoured up to this long before the retry.
LLM_RETRY_AFTER_MAX_SECONDS = env_float("LLM_RETRY_AFTER_MAX_SECONDS", 10.0)
LLM_BREAKER_FAILURES = env_int("LLM_BREAKER_FAILURES", 5)
LLM_BREAKER_COOLDOWN_SECONDS = env_float("LLM_BREAKER_COOLDOWN_SECONDS", 30.0)
LLM_MAX_IN_FLIGHT = env_int("LLM_MAX_IN_FLIGHT", 32)
LLM_ADMISSION_WAIT_SECONDS = env_float("LLM_ADMISSION_WAIT_SECONDS", 5.0)
LLM_STREAM = env_bool("LLM_STREAM", True)
LLM_MAX_TOKENS = env_int("LLM_MAX_TOKENS", 512)
LLM_TEMPERATURE = env_float("LLM_TEMPERATURE", 0.2)
LLM_SEND_CACHE_SALT = env_bool("LLM_SEND_CACHE_SALT", True)
LLM_FALLBACK_SEND_CACHE_SALT = env_bool("LLM_FALLBACK_SEND_CACHE_SALT", LLM_SEND_CACHE_SALT)
LLM_CONTEXT_BUDGET_TOKENS = env_int("LLM_CONTEXT_BUDGET_TOKENS", 8000)
LLM_RETRIEVAL_ITEMS = env_int("LLM_RETRIEVAL_ITEMS", 40)
LLM_HISTORY_MESSAGES = env_int("LLM_HISTORY_MESSAGES", 30)

# --- Alerts (inbox/upkeep/alerts.py)
# --------------------------------------------------------------- Raise an alert when a queue's
# oldest job has waited longer than this.
ALERT_OLDEST_JOB_SECONDS = env_float("ALERT_OLDEST_JOB_SECONDS", 300.0)
# Optional notifications when an alert is raised: a JSON POST and/or e-mails.
ALERT_WEBHOOK_URL = env_str("ALERT_WEBHOOK_URL")
ALERT_EMAILS = env_list("ALERT_EMAILS")
# The same alert (business, kind, subject) notifies at most once per this many seconds, and
# at most ALERT_NOTIFY_MAX_PER_HOUR notifications leave per hour in all.
ALERT_NOTIFY_INTERVAL_SECONDS = env_int("ALERT_NOTIFY_INTERVAL_SECONDS", 3600)
ALERT_NOTIFY_MAX_PER_HOUR = env_int("ALERT_NOTIFY_MAX_PER_HOUR", 30)
# Alert mails and Team-page invitations (inbox/conversations/team.py). `make run` prints them
# on its console (the console backend) unless EMAIL_BACKEND says otherwise; the file backend
# (django.core.mail.backends.filebased.EmailBackend) writes them under EMAIL_FILE_PATH.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH", str(VAR_DIR / "mail"))
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "inbox@localhost")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
CELERY_BEAT_SCHEDULE["check-alerts"] = {"task": "inbox.check_alerts", "schedule": 60.0}

# --- Data retention (inbox/upkeep/retention.py)
# ---------------------------------------------------- Message text, media files and transcripts
# older than this many days are purged (the rows stay, marked purged). 0 = keep forever;
# Business.retention_days overrides it per business.
RETENTION_DAYS = env_int("RETENTION_DAYS", 0)
CELERY_BEAT_SCHEDULE["purge-old-data"] = {"task": "inbox.purge_old_data", "schedule": 3600.0}

# --- Price-list uploads (assistant/knowledge/price_upload.py) -------------------------------
# A worker parses each uploaded file for its preview within these limits (the file is refused
# with a message past them).
PRICE_UPLOAD_TIME_LIMIT_SECONDS = env_int("PRICE_UPLOAD_TIME_LIMIT_SECONDS", 60)
PRICE_UPLOAD_MEMORY_MB = env_int("PRICE_UPLOAD_MEMORY_MB", 1024)

# --- Login rate limit (inbox/web/login_limit.py) -------------------------------------------------
LOGIN_MAX_FAILURES = env_int("LOGIN_MAX_FAILURES", 5)
LOGIN_MAX_FAILURES_PER_ADDRESS = env_int("LOGIN_MAX_FAILURES_PER_ADDRESS", 50)
LOGIN_WINDOW_SECONDS = env_int("LOGIN_WINDOW_SECONDS", 900)
# Only behind a proxy that sets X-Forwarded-For itself (else clients choose their address):
# deploy/ sets it, behind the shipped nginx, which overwrites the header.
LOGIN_TRUST_X_FORWARDED_FOR = env_bool("LOGIN_TRUST_X_FORWARDED_FOR")
# Password-reset mails (inbox/web/password_reset.py): per client address and per e-mail address.
PASSWORD_RESET_MAX_PER_ADDRESS = env_int("PASSWORD_RESET_MAX_PER_ADDRESS", 5)
PASSWORD_RESET_MAX_PER_ACCOUNT = env_int("PASSWORD_RESET_MAX_PER_ACCOUNT", 3)
PASSWORD_RESET_WINDOW_SECONDS = env_int("PASSWORD_RESET_WINDOW_SECONDS", 3600)

# --- Bitrix24 sync (integrations/bitrix24) --------------------------------------------------
# Request URLs carry the webhook secret: httpx is quiet (LOGGING above), and so is httpcore.
LOGGING["loggers"]["httpcore"] = {"level": "WARNING"}  # type: ignore[index]
BITRIX24_HTTP_TIMEOUT = env_float("BITRIX24_HTTP_TIMEOUT", 30.0)
# In-process attempts per request before the job is handed back for a later retry.
BITRIX24_MAX_ATTEMPTS = env_int("BITRIX24_MAX_ATTEMPTS", 5)
BITRIX24_BACKOFF_BASE = env_float("BITRIX24_BACKOFF_BASE", 1.0)
BITRIX24_BACKOFF_CAP = env_float("BITRIX24_BACKOFF_CAP", 30.0)
# Longest a worker waits in-process for a bucket slot / a method's operating-time reset.
BITRIX24_MAX_BUCKET_WAIT = env_float("BITRIX24_MAX_BUCKET_WAIT", 120.0)
BITRIX24_MAX_BLOCK_WAIT = env_float("BITRIX24_MAX_BLOCK_WAIT", 30.0)
# Delay before a failed sync job is tried again (doubles per attempt up to the cap).
BITRIX24_RETRY_BASE = env_float("BITRIX24_RETRY_BASE", 10.0)
BITRIX24_RETRY_CAP = env_float("BITRIX24_RETRY_CAP", 600.0)
# Reconciliation pass (DATE_MODIFY after the checkpoint minus the overlap) and offline events.
BITRIX24_RECONCILE_SECONDS = env_float("BITRIX24_RECONCILE_SECONDS", 300.0)
BITRIX24_RECONCILE_OVERLAP_SECONDS = env_float("BITRIX24_RECONCILE_OVERLAP_SECONDS", 300.0)
BITRIX24_OFFLINE_SECONDS = env_float("BITRIX24_OFFLINE_SECONDS", 60.0)
BITRIX24_SWEEP_SECONDS = env_float("BITRIX24_SWEEP_SECONDS", 60.0)
CELERY_BEAT_SCHEDULE.update(
    {
        # Outbox rows whose enqueue was lost, or whose retry is due.
        "bitrix24-sweep": {"task": "bitrix24.sweep", "schedule": BITRIX24_SWEEP_SECONDS},
        # Entities modified after the checkpoint: catches events Bitrix24 lost (it never retries).
        "bitrix24-reconcile": {
            "task": "bitrix24.reconcile_all",
            "schedule": BITRIX24_RECONCILE_SECONDS,
        },
        # Local-application mode: the portal's offline event queue.
        "bitrix24-offline": {"task": "bitrix24.offline_all", "schedule": BITRIX24_OFFLINE_SECONDS},
    }
)
