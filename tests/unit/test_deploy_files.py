"""The files a team copies (deploy/, docs/deploy.md) run what the tests run: the compose file's and
the systemd units' commands are the ones tests/integration/jobs/test_workers_apart.py starts
(tests/deploy_commands.py), every variable they set is one contextviewer reads (documented on the
configuration page) or a standard one, and the image copies files that exist."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from tests.deploy_commands import WEB, WORKER

pytestmark = pytest.mark.backend_independent

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
STANDARD = {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}


def _compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def _args(command: list[str]) -> list[str]:
    assert command[0] == "contextviewer", command
    return [a for a in command[1:] if not a.startswith("--host") and not a.startswith("--port")
            and not re.fullmatch(r"[\d.]+", a)]


def test_the_compose_file_runs_the_web_server_and_workers_as_the_tests_do():
    services = _compose()["services"]
    assert _args(services["web"]["command"]) == WEB
    workers = [s for name, s in services.items() if name.startswith("worker")]
    assert len(workers) == 2 and all(_args(w["command"]) == WORKER for w in workers)
    # Each process its own data folder: no volume is mounted by two of them.
    mounts = [v.split(":")[0] for name in ("web", "worker1", "worker2") for v in services[name]["volumes"]]
    assert len(mounts) == len(set(mounts)) == 3
    # What workers on other machines need: a store every worker reads, not the web server's disk.
    assert services["web"]["environment"]["CONTEXTVIEWER_UPLOAD_STORE"] in {"database", "s3"}


def test_the_systemd_units_run_the_same_commands_each_with_its_own_data_folder():
    units = {p.name: p.read_text() for p in (DEPLOY / "systemd").glob("*.service")}
    starts = {name: shlex.split(re.search(r"^ExecStart=(.+)$", text, re.M).group(1)) for name, text in units.items()}
    assert _args(["contextviewer", *starts["contextviewer-web.service"][1:]]) == WEB
    assert starts["contextviewer-worker@.service"][1:] == WORKER
    folders = [re.search(r"CONTEXTVIEWER_DATA_DIR=(\S+)", text).group(1) for text in units.values()]
    assert "%i" in folders[[*units].index("contextviewer-worker@.service")] and len(set(folders)) == 2


def test_every_variable_the_deployment_sets_is_one_contextviewer_reads():
    documented = set(re.findall(r"`((?:CONTEXTVIEWER|TIKTOKEN)_[A-Z0-9_]+)`", (ROOT / "docs" / "configuration.md").read_text()))
    named = set()
    for path in [DEPLOY / "contextviewer.env.example", *(DEPLOY / "systemd").glob("*.service"), DEPLOY / "compose.yaml"]:
        named |= set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", path.read_text(), re.M))
        named |= set(re.findall(r"^\s+([A-Z][A-Z0-9_]+):", path.read_text(), re.M))
    named -= {"POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB"}  # the postgres image's own
    assert named and named <= documented | STANDARD, sorted(named - documented - STANDARD)


def test_the_image_copies_files_that_exist():
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), source
