"""One settings module, driven by environment variables, with defaults that just run.

Embedded default: SQLite (WAL, IMMEDIATE transactions) + Celery's filesystem broker.
Team setup: DATABASE_URL=postgres://... and CELERY_BROKER_URL=redis://...
"""

import os
from pathlib import Path
from urllib.parse import unquote, urlparse

BASE_DIR = Path(__file__).resolve().parent.parent
# A clone (its editable install too) serves its top-level templates/ and static/ where they are; an
# installed copy (a wheel, pipx: docs/configuration.md#installed-with-pipx) carries them inside the
# package, copied in by the wheel's build (setup.py). Asked of the package itself, not of BASE_DIR,
# which is site-packages there (where another distribution's `templates` folder may lie).
PACKAGE_DIR = Path(__file__).resolve().parent
INSTALLED_COPY = (PACKAGE_DIR / "_templates").is_dir()
TEMPLATES_DIR = PACKAGE_DIR / "_templates" if INSTALLED_COPY else BASE_DIR / "templates"
STATIC_DIR = PACKAGE_DIR / "_static" if INSTALLED_COPY else BASE_DIR / "static"


def env(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _default_data_dir() -> Path:
    """<clone>/var in a clone; in an installed copy the user's data folder (XDG's), never site-packages."""
    if not INSTALLED_COPY:
        return BASE_DIR / "var"
    xdg = env("XDG_DATA_HOME")  # the XDG spec ignores a relative one
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share") / "contextviewer"


DATA_DIR = Path(env("CONTEXTVIEWER_DATA_DIR", str(_default_data_dir()))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

# The shared folder beside a clone (../shared), which an installed copy has not: there the defaults
# are folders of the data dir, absent until someone fills them (`serve --samples` says so).
_SHARED = DATA_DIR if INSTALLED_COPY else BASE_DIR.parent / "shared"
# Real session logs from public projects, read in place (never copied into the project).
FIXTURES_DIR = Path(env("CONTEXTVIEWER_FIXTURES", str(_SHARED / "fixtures")))
# Captured request parts (Claude Code's system prompt and tools) read in place for the gauge.
SCHEMAS_DIR = Path(env("CONTEXTVIEWER_SCHEMAS", str(_SHARED / "schemas")))
SAMPLES_DIR = env("CONTEXTVIEWER_SAMPLES", "")

DEBUG = env_bool("CONTEXTVIEWER_DEBUG", False)


def _secret_key() -> str:
    key = env("CONTEXTVIEWER_SECRET_KEY")
    if key:
        return key
    # A per-install key kept beside the data, so sessions survive restarts.
    path = DATA_DIR / "secret_key"
    if not path.exists():
        import secrets

        tmp = path.with_suffix(".tmp")
        tmp.write_text(secrets.token_urlsafe(50))
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = [h for h in env("CONTEXTVIEWER_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in env("CONTEXTVIEWER_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    # The admin without its start-up autodiscovery (every app's admin module, auth's forms): urls.py
    # runs it when the site's URLs load, so a command's start does not pay for it (bench startup).
    "django.contrib.admin.apps.SimpleAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    # Apps in data-flow order (docs/architecture.md): each imports only the ones listed before it.
    "contextviewer.display",
    "contextviewer.accounts",
    "contextviewer.jobs",
    "contextviewer.conversations",
    "contextviewer.providers",
    "contextviewer.ingest",
    "contextviewer.builds",
    "contextviewer.lab",
    "contextviewer.viewer",
    "contextviewer.review",
    "contextviewer.usage",
    "ops",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Pages, fragments and static files gzipped for clients that accept it (a 926 KB turn fragment
    # is 80 KB). BREACH: Django masks the CSRF token per response and pads every gzipped response
    # with random bytes (Django 4.2+); secrets in transcripts are masked at import.
    "django.middleware.gzip.GZipMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "contextviewer.middleware.ContentSecurityPolicyMiddleware",
    "contextviewer.middleware.UploadLimitMiddleware",
    # The database out of reach (restarting, or locked past its timeout): 503 with Retry-After.
    "contextviewer.middleware.DatabaseUnavailableMiddleware",
    "contextviewer.middleware.DiskFullMiddleware",  # no space left: 507 with what to do
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "contextviewer.middleware.PrivateNoStoreMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "contextviewer.urls"
WSGI_APPLICATION = "contextviewer.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [TEMPLATES_DIR],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "contextviewer.accounts.context_processors.nav",
            ],
        },
    }
]


def _database(url: str) -> dict:
    if not url:
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": env("CONTEXTVIEWER_SQLITE_PATH", str(DATA_DIR / "contextviewer.sqlite3")),
            # The web server sets it (conversations/webserver.py): each of its threads keeps its own
            # connection between requests (connect + PRAGMAs cost 1-2 ms of CPU a request); no
            # transaction stays open across requests, so an idle connection holds no WAL snapshot.
            "CONN_MAX_AGE": int(env("CONTEXTVIEWER_SQLITE_CONN_MAX_AGE", "0")),
            "CONN_HEALTH_CHECKS": True,  # a kept connection found broken is replaced, not used
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            "TEST": {"NAME": env("CONTEXTVIEWER_SQLITE_TEST_PATH", str(DATA_DIR / "test.sqlite3"))},
        }
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ValueError(f"DATABASE_URL: unsupported scheme {parsed.scheme!r} (use postgres://)")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "contextviewer",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": parsed.hostname or "",
        "PORT": str(parsed.port or ""),
        # The web server sets it as for SQLite (ops/webserver.py): a web thread keeps its connection
        # between requests instead of paying PostgreSQL's connect and backend start-up (about 7 ms of
        # each request here); the worker and the commands close theirs.
        "CONN_MAX_AGE": int(env("CONTEXTVIEWER_PG_CONN_MAX_AGE", "0")),
        # A connection lost (the server restarted) is replaced at the next request; the request
        # that lost it answers 503 with Retry-After (middleware.DatabaseUnavailableMiddleware).
        "CONN_HEALTH_CHECKS": True,
        "TEST": {"NAME": env("CONTEXTVIEWER_PG_TEST_NAME", "") or None},
    }


DATABASES = {"default": _database(env("DATABASE_URL"))}
IS_SQLITE = DATABASES["default"]["ENGINE"].endswith("sqlite3")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "index"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [STATIC_DIR]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_ROOT = DATA_DIR / "media"
# Where every worker reads an upload (conversations/upload_store.py, docs/deploy.md): "files" (this
# machine's MEDIA_ROOT), "database", or "s3" (an S3-compatible bucket through django-storages).
UPLOAD_STORE = env("CONTEXTVIEWER_UPLOAD_STORE").strip().lower() or "files"
UPLOAD_S3 = {
    "bucket_name": env("CONTEXTVIEWER_S3_BUCKET"),
    "endpoint_url": env("CONTEXTVIEWER_S3_ENDPOINT_URL"),
    "region_name": env("CONTEXTVIEWER_S3_REGION"),
    "location": env("CONTEXTVIEWER_S3_PREFIX"),  # a folder inside the bucket
}
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# Prices of the usage reports (docs/usage.md): genai-prices' shipped data, or over it a JSON file a
# user supplies (model prices per million tokens, or genai-prices' own data file to update it).
USAGE_PRICES_FILE = env("CONTEXTVIEWER_USAGE_PRICES", "")

# The builtin handoff's size in tokens, however many folds came before it (providers/builtin.py).
HANDOFF_BUDGET = max(300, int(env("CONTEXTVIEWER_HANDOFF_BUDGET", "2500") or 2500))

# A title job (one per import) asks the project's LLM provider for at most this many titles; the
# conversations past it keep the builtin (offline) title, and the job's result says so.
TITLE_CALL_BUDGET = max(0, int(env("CONTEXTVIEWER_TITLE_CALL_BUDGET", "50") or 50))

# Uploads: stream to disk, cap the size. A single session file above the cap is refused with a message.
# Decimal, as every message about it counts megabytes (1 GB: "1000 MB", not 1 GiB's "1073 MB").
MAX_UPLOAD_BYTES = int(env("CONTEXTVIEWER_MAX_UPLOAD_BYTES", str(1000 * 1000 * 1000)))
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FILES = 500
# A .zip upload (a folder zipped) is unpacked only within these: its files' total size and count.
MAX_UNZIPPED_BYTES = int(env("CONTEXTVIEWER_MAX_UNZIPPED_BYTES", str(4 * 1024 * 1024 * 1024)))
MAX_UNZIPPED_FILES = int(env("CONTEXTVIEWER_MAX_UNZIPPED_FILES", "20000"))
FILE_UPLOAD_TEMP_DIR = str(DATA_DIR / "tmp")
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)

# Import limits (bytes): a line above MAX_LINE_BYTES is rejected without being held whole;
# a gzip file expanding beyond MAX_DECOMPRESSED_BYTES is stopped.
MAX_LINE_BYTES = int(env("CONTEXTVIEWER_MAX_LINE_BYTES", str(32 * 1024 * 1024)))
MAX_DECOMPRESSED_BYTES = int(env("CONTEXTVIEWER_MAX_DECOMPRESSED_BYTES", str(4 * 1024 * 1024 * 1024)))
# A file with at least this many bytes left to read is parsed and tokenized in a forked process
# beside the database writer (both cores); a smaller one on a second thread. In an import (a job,
# `manage.py import`) every file is parsed in the import's parsing process (ingest/child.py), so a
# crashing parser fails its file only. -1: never fork (a parser's crash then ends the worker).
IMPORT_PROCESS_MIN_BYTES = int(env("CONTEXTVIEWER_IMPORT_PROCESS_MIN_BYTES", str(4 * 1024 * 1024)))

# Caches hold job progress written while an import transaction is open.
REDIS_URL = env("REDIS_URL", "")
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(DATA_DIR / "cache"),
        }
    }
# Rendered fragments of conversations (conversations/page_cache.py), on every setup: each web
# process's own memory, at most CONTEXTVIEWER_FRAGMENT_CACHE_ENTRIES of them (of at most 512 KB each,
# most are 5-60 KB), the least recently used dropped first. Not the file cache nor Redis: a
# fragment holds transcript text, which must not outlive a deletion or a re-mask in a file or
# another server, nor the code that rendered it (a restart starts empty).
CACHES["fragments"] = {
    "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
    "LOCATION": "contextviewer-fragments",
    "TIMEOUT": None,
    "OPTIONS": {"MAX_ENTRIES": int(env("CONTEXTVIEWER_FRAGMENT_CACHE_ENTRIES", "400")), "CULL_FREQUENCY": 4},
}

# Celery: a real worker in every run mode. Filesystem broker by default.
# An empty CELERY_BROKER_URL is the default too: Celery would read "" as amqp://localhost and
# quietly share a RabbitMQ that happens to run there with every other instance.
CELERY_BROKER_URL = env("CELERY_BROKER_URL").strip() or "filesystem://"
# No result backend: a job's outcome is its Job row (conversations/jobs.py); nothing reads task
# results, and a result store's models would load Celery at every start (`manage.py bench startup`).
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# How long a worker waits for a killed pool child's result before it gives the task back (Celery's
# worker_lost_wait, 10 s): the job recovery tests shorten it.
CELERY_WORKER_LOST_WAIT = float(env("CONTEXTVIEWER_WORKER_LOST_WAIT", "10"))
CELERY_TASK_TIME_LIMIT = int(env("CONTEXTVIEWER_TASK_TIME_LIMIT", "3000"))
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 60
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
BROKER_DIR = Path(env("CONTEXTVIEWER_BROKER_DIR", str(DATA_DIR / "broker")))
if CELERY_BROKER_URL.startswith("filesystem://"):
    for sub in ("queue", "processed", "control"):
        (BROKER_DIR / sub).mkdir(parents=True, exist_ok=True)
    # kombu's filesystem transport, with messages written whole and taken once (jobs/broker_files.py)
    CELERY_BROKER_TRANSPORT = "contextviewer.jobs.broker_files:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(BROKER_DIR / "queue"),
        "data_folder_out": str(BROKER_DIR / "queue"),
        "processed_folder": str(BROKER_DIR / "processed"),
        "control_folder": str(BROKER_DIR / "control"),
        "store_processed": False,
        "polling_interval": 0.05,
    }
else:
    # Time limits stay below the visibility timeout, so a lost job is redelivered, not duplicated.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT + 600}

# Tokens: tiktoken reads its rank files from here (placed from the bpe-openai wheel, offline).
TIKTOKEN_CACHE_DIR = Path(env("TIKTOKEN_CACHE_DIR", str(DATA_DIR / "tiktoken")))
os.environ["TIKTOKEN_CACHE_DIR"] = str(TIKTOKEN_CACHE_DIR)  # read by contextviewer.core.tokens and tiktoken

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Behind TLS (see docs/security.md). The defaults keep the local HTTP embedded mode working.
# CONTEXTVIEWER_SECURE_COOKIES: the session and CSRF cookies are sent over HTTPS only.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("CONTEXTVIEWER_SECURE_COOKIES", False)
# CONTEXTVIEWER_HSTS_SECONDS: Strict-Transport-Security for that long (0: none), with subdomains
# unless CONTEXTVIEWER_HSTS_INCLUDE_SUBDOMAINS=0; CONTEXTVIEWER_HSTS_PRELOAD=1 adds preload.
SECURE_HSTS_SECONDS = int(env("CONTEXTVIEWER_HSTS_SECONDS", "0") or 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0 and env_bool("CONTEXTVIEWER_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0 and env_bool("CONTEXTVIEWER_HSTS_PRELOAD", False)
# CONTEXTVIEWER_SSL_REDIRECT: redirect plain HTTP to HTTPS (when the proxy does not already).
SECURE_SSL_REDIRECT = env_bool("CONTEXTVIEWER_SSL_REDIRECT", False)
# CONTEXTVIEWER_TRUSTED_PROXY: a reverse proxy that terminates TLS sets X-Forwarded-Proto,
# X-Forwarded-Host and X-Forwarded-For, and overwrites what clients send in them. Only then are
# these headers believed (the request is HTTPS, its host, the client's address for throttling).
TRUSTED_PROXY = env_bool("CONTEXTVIEWER_TRUSTED_PROXY", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if TRUSTED_PROXY else None
USE_X_FORWARDED_HOST = TRUSTED_PROXY

# Login throttling (contextviewer.accounts.throttle, on the cache): after LOGIN_FAILURE_LIMIT wrong
# passwords for a user name, or LOGIN_IP_FAILURE_LIMIT failed sign-ins from one address, within
# LOGIN_LOCKOUT_SECONDS, sign-in is refused for LOGIN_LOCKOUT_SECONDS. 0 turns a limit off.
AUTHENTICATION_BACKENDS = ["contextviewer.accounts.throttle.ThrottledModelBackend"]
LOGIN_FAILURE_LIMIT = int(env("CONTEXTVIEWER_LOGIN_FAILURES", "10") or 0)
LOGIN_IP_FAILURE_LIMIT = int(env("CONTEXTVIEWER_LOGIN_IP_FAILURES", "30") or 0)
LOGIN_LOCKOUT_SECONDS = int(env("CONTEXTVIEWER_LOGIN_LOCKOUT_SECONDS", "900") or 0)

# Password reset by email (contextviewer.accounts.passwords): at most PASSWORD_RESET_LIMIT requests
# per client address, and per address asked about, within PASSWORD_RESET_WINDOW_SECONDS (0: no
# limit); a reset link works once, for PASSWORD_RESET_TIMEOUT seconds.
PASSWORD_RESET_LIMIT = int(env("CONTEXTVIEWER_PASSWORD_RESET_LIMIT", "5") or 0)
PASSWORD_RESET_WINDOW_SECONDS = int(env("CONTEXTVIEWER_PASSWORD_RESET_WINDOW_SECONDS", "3600") or 0)
PASSWORD_RESET_TIMEOUT = int(env("CONTEXTVIEWER_PASSWORD_RESET_TIMEOUT", "3600") or 3600)

# Email: printed on the console by default (the embedded mode has no mail server: the reset link
# appears in the web server's output); CONTEXTVIEWER_EMAIL_HOST sends it by SMTP.
EMAIL_HOST = env("CONTEXTVIEWER_EMAIL_HOST", "localhost")
EMAIL_BACKEND = env("CONTEXTVIEWER_EMAIL_BACKEND") or (
    "django.core.mail.backends.smtp.EmailBackend" if env("CONTEXTVIEWER_EMAIL_HOST")
    else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_PORT = int(env("CONTEXTVIEWER_EMAIL_PORT", "587") or 587)
EMAIL_HOST_USER = env("CONTEXTVIEWER_EMAIL_USER")
EMAIL_HOST_PASSWORD = env("CONTEXTVIEWER_EMAIL_PASSWORD")
EMAIL_USE_SSL = env_bool("CONTEXTVIEWER_EMAIL_SSL", False)  # implicit TLS (port 465)
EMAIL_USE_TLS = not EMAIL_USE_SSL and env_bool("CONTEXTVIEWER_EMAIL_STARTTLS", True)
EMAIL_TIMEOUT = int(env("CONTEXTVIEWER_EMAIL_TIMEOUT", "30") or 30)
DEFAULT_FROM_EMAIL = env("CONTEXTVIEWER_EMAIL_FROM", "contextviewer@localhost")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("CONTEXTVIEWER_LOG_LEVEL", "WARNING")},
}
