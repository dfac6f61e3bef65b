"""A command's start loads none of the heavy modules (provider SDKs, tokenizer, Celery, crypto);
they load where they are used, and everything that needs them still finds them. Timings are
printed by `manage.py bench startup`, never asserted here."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.urls import reverse

# Cannot differ between SQLite and PostgreSQL (which modules a command's start imports: a subprocess with no query): bin/test runs it on SQLite only.
pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("openai", "anthropic", "tiktoken", "celery", "kombu", "cryptography", "pygments")


def _run(code: str) -> dict:
    """`code` in a fresh interpreter after django.setup(); it prints one JSON object."""
    prelude = (
        "import json, os, sys\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'contextviewer.settings')\n"
        "import django\n"
        "django.setup()\n"
        f"HEAVY = {HEAVY!r}\n"
        "def loaded():\n"
        "    return sorted({m.split('.')[0] for m in sys.modules} & set(HEAVY))\n"
    )
    done = subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_setup_and_the_import_command_load_no_heavy_module():
    got = _run(
        "from django.core.management import load_command_class\n"
        "load_command_class('contextviewer.ingest', 'import')\n"
        "print(json.dumps({'loaded': loaded()}))\n"
    )
    assert got["loaded"] == []


def test_help_of_the_import_command_still_prints():
    done = subprocess.run([sys.executable, "manage.py", "import", "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "--project" in done.stdout


def test_a_queued_job_still_reaches_the_configured_celery_app():
    got = _run(
        "from contextviewer.jobs.tasks import run_job_task\n"
        "from django.conf import settings\n"
        "import contextviewer\n"
        "from celery.app.utils import find_app\n"
        "app = find_app('contextviewer')\n"  # what `celery -A contextviewer worker` finds
        "print(json.dumps({'same': run_job_task.app is app is contextviewer.celery_app,\n"
        "                  'broker': app.conf.broker_url == settings.CELERY_BROKER_URL,\n"
        "                  'registered': 'contextviewer.run_job' in app.tasks,\n"
        "                  'ignore_result': run_job_task.ignore_result}))\n"
    )
    assert got == {"same": True, "broker": True, "registered": True, "ignore_result": True}


def test_provider_keys_are_still_encrypted_at_rest():
    got = _run(
        "from contextviewer.providers import models\n"
        "before = loaded()\n"
        "token = models.encrypt('sk-secret-value')\n"
        "print(json.dumps({'before': before, 'plain_in_token': 'sk-secret' in token,\n"
        "                  'back': models.decrypt(token), 'bad': models.decrypt('not-a-token')}))\n"
    )
    assert got == {"before": [], "plain_in_token": False, "back": "sk-secret-value", "bad": ""}


@pytest.mark.django_db
def test_the_admin_still_lists_the_models_once_the_urls_load(client):
    from django.contrib.auth import get_user_model

    admin_user = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-12345")
    client.force_login(admin_user)
    html = client.get(reverse("admin:index")).content.decode()
    assert "Projects" in html and "Users" in html


def test_an_empty_broker_url_is_the_filesystem_broker_not_a_rabbitmq_that_happens_to_run_here():
    """`CELERY_BROKER_URL=` (set but empty, as an env file leaves it) once gave Celery "" and so
    amqp://localhost: two instances with their own data folders then shared the machine's RabbitMQ,
    and one's worker took the other's jobs."""
    code = (
        "import os, json\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'contextviewer.settings')\n"
        "import django; django.setup()\n"
        "import contextviewer\n"
        "conn = contextviewer.celery_app.connection_for_write()\n"
        "print(json.dumps({'transport': conn.transport_cls if isinstance(conn.transport_cls, str) else repr(conn.transport_cls),\n"
        "                  'folder': contextviewer.celery_app.conf.broker_transport_options.get('data_folder_in')}))\n"
    )
    env = {**os.environ, "CELERY_BROKER_URL": ""}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert "broker_files" in got["transport"] and got["folder"], got
