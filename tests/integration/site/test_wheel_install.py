"""Installed like the tools it sits beside (issue 38, item 4): a wheel built from the clone, installed
into a fresh virtualenv outside it, gives a `contextviewer` command that migrates, creates a user and
serves the pages, with the templates and static files the wheel carries (setup.py copies the clone's
top-level templates/ and static/ into it) and its data in the folder it is given, not in the clone.

How: the wheel is built with pip from a copy of the clone (its files, without what .gitignore keeps
out, plus stand-ins for var/ and .venv/ as a clone has them), so that the build writes nothing into
the clone; pip's build isolation takes setuptools from the package registry (the clone's .venv has
no `wheel` for --no-build-isolation). The fresh venv is made without --system-site-packages and gets
contextviewer itself from the wheel only (`pip install --no-deps --no-index`); its THIRD-PARTY
dependencies come from the clone's .venv through a .pth file (resolving them from the registry takes
one or two minutes here), which lists that site-packages folder only: the clone's editable
contextviewer is not reachable there (its finder is loaded by a .pth file in that folder, and .pth
files of a folder added that way are not read), and the test checks that contextviewer, ops, the
templates and the static files all come from the fresh venv. About 25 s.

Runs once (backend_independent): the installed copy uses its own SQLite database in a temporary
data folder, whatever backend the run is on."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import psutil
import pytest

pytestmark = pytest.mark.backend_independent
ROOT = Path(__file__).resolve().parents[3]
# What a clone has that is no source of the wheel (.gitignore's folders), left out of the copy.
NOT_COPIED = {".git", ".venv", "var", "build", "dist", "test-results", "screenshots-tmp"}


def _copy_clone(dest: Path) -> Path:
    def ignore(folder: str, names: list[str]) -> set[str]:
        top = Path(folder).resolve() == ROOT
        return {n for n in names if n == "__pycache__" or n.endswith((".egg-info", ".pyc")) or (top and n in NOT_COPIED)}

    def copy(source: str, target: str) -> None:
        try:
            shutil.copy2(source, target)
        except FileNotFoundError:  # gone meanwhile (an editor's temporary file)
            pass

    shutil.copytree(ROOT, dest, ignore=ignore, copy_function=copy)
    for stand_in in ("var/contextviewer.sqlite3", ".venv/lib/python3.11/site-packages/stray/__init__.py"):
        (dest / stand_in).parent.mkdir(parents=True, exist_ok=True)
        (dest / stand_in).write_text("")  # as in a clone: none of it may reach the wheel
    return dest


def _run(args: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = _copy_clone(work / "clone")
    _run([sys.executable, "-m", "pip", "wheel", source, "--no-deps", "--no-cache-dir", "-q", "-w", work / "dist"],
         cwd=source, timeout=300)
    [built] = (work / "dist").glob("contextviewer-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict:
    """A fresh venv outside the clone with the wheel installed, and the environment to run it in."""
    place = tmp_path_factory.mktemp("installed")
    venv = place / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], timeout=120)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel], timeout=300)
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    deps = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])  # the clone's .venv
    (site / "clone-venv-third-party.pth").write_text("".join(f"{d}\n" for d in deps))
    (place / "home").mkdir()
    (place / "cwd").mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(place / "home"), "LANG": "C.UTF-8"}
    return {"venv": venv, "command": venv / "bin" / "contextviewer", "site": site, "env": env, "cwd": place / "cwd",
            "data": place / "data"}


def test_the_wheel_carries_the_templates_and_static_files_and_nothing_of_the_clone_besides(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"contextviewer", "ops", wheel.name.split("-py3")[0] + ".dist-info"}  # no var/, tests/, .venv/, docs/
    assert not [n for n in names if "__pycache__" in n or "/var/" in n or n.endswith(".sqlite3")]
    for folder, inside in (("templates", "_templates"), ("static", "_static")):
        files = {str(p.relative_to(ROOT / folder)) for p in (ROOT / folder).rglob("*") if p.is_file()}
        assert files, folder
        carried = {n.removeprefix(f"contextviewer/{inside}/") for n in names if n.startswith(f"contextviewer/{inside}/")}
        assert carried == files, f"{folder}/ and the wheel's contextviewer/{inside}/ differ"
    entry_points = zipfile.ZipFile(wheel).read(wheel.name.split("-py3")[0] + ".dist-info/entry_points.txt").decode()
    assert "contextviewer = contextviewer.cli:main" in entry_points


PROBE = ("import json, contextviewer, ops; from django.conf import settings as s; print('PROBE ' + json.dumps("
         "[contextviewer.__file__, ops.__file__, str(s.TEMPLATES_DIR), str(s.STATIC_DIR), str(s.DATA_DIR), str(s.FIXTURES_DIR)]))")


def _probe(installed, **env) -> list[str]:
    done = _run([installed["command"], "shell", "-c", PROBE], cwd=installed["cwd"], env={**installed["env"], **env}, timeout=120)
    return json.loads(done.stdout.split("PROBE ", 1)[1].splitlines()[0])


def test_the_installed_copy_keeps_its_data_in_the_users_data_folder_and_runs_from_its_venv(installed):
    home, site = Path(installed["env"]["HOME"]), installed["site"]
    package, ops, templates, static, data, fixtures = _probe(installed)
    assert Path(package).parent == site / "contextviewer" and Path(ops).parent == site / "ops"  # not the clone's
    assert (Path(templates), Path(static)) == (site / "contextviewer" / "_templates", site / "contextviewer" / "_static")
    assert Path(data) == home / ".local" / "share" / "contextviewer"  # not <site-packages>/../var
    assert Path(fixtures) == Path(data) / "fixtures" and not Path(fixtures).exists()  # no ../shared beside site-packages
    xdg = installed["cwd"].parent / "xdg"
    assert Path(_probe(installed, XDG_DATA_HOME=str(xdg))[4]) == xdg / "contextviewer"
    assert Path(_probe(installed, XDG_DATA_HOME=str(xdg), CONTEXTVIEWER_DATA_DIR=str(installed["data"]))[4]) == installed["data"]


def test_the_command_lists_its_main_subcommands(installed):
    out = _run([installed["command"], "--help"], cwd=installed["cwd"], env=installed["env"], timeout=120).stdout
    assert out.startswith("usage: contextviewer <command>")
    for name in ("serve", "import", "watch", "usage", "agents"):
        assert re.search(rf"^  {name} +\S", out, re.M), name
    assert "Type 'contextviewer help <subcommand>'" in out and "createsuperuser" in out  # and Django's whole list


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(opener, url: str, data: dict | None = None) -> tuple[int, bytes, str]:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    try:
        with opener.open(urllib.request.Request(url, data=body), timeout=30) as response:
            return response.status, response.read(), response.url
    except urllib.error.HTTPError as e:
        return e.code, e.read(), url


def _venv_processes(venv: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if any(str(venv) in part for part in proc.cmdline()) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            pass
    return found


def test_the_installed_command_migrates_creates_a_user_and_serves_the_pages(installed):
    """`contextviewer migrate`, `createsuperuser` (a manage.py command passed through) and `serve`, in a
    folder outside the clone with a data folder of its own; the login page, the CSS it links and a page
    behind the login over HTTP; then serve stops with everything it started."""
    command, venv = installed["command"], installed["venv"]
    env = {**installed["env"], "CONTEXTVIEWER_DATA_DIR": str(installed["data"]),
           "DJANGO_SUPERUSER_PASSWORD": "wheel-pass-1234"}
    _run([command, "migrate", "-v0"], cwd=installed["cwd"], env=env, timeout=300)
    assert (installed["data"] / "contextviewer.sqlite3").is_file()
    _run([command, "createsuperuser", "--noinput", "--username", "lead", "--email", "lead@example.com"],
         cwd=installed["cwd"], env=env, timeout=120)
    port = _free_port()
    log = installed["cwd"].parent / "serve.log"
    with open(log, "w") as out:
        serve = subprocess.Popen([str(command), "serve", "--port", str(port), "--workers", "1"], cwd=installed["cwd"],
                                 env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    try:
        deadline = time.monotonic() + 60
        while True:
            assert serve.poll() is None, f"serve ended ({serve.returncode}):\n{log.read_text()[-3000:]}"
            try:
                status, page, _ = _get(opener, f"{base}/login/")
                break
            except OSError:
                assert time.monotonic() < deadline, f"nothing served on {port} in 60 s:\n{log.read_text()[-3000:]}"
                time.sleep(0.25)
        assert status == 200
        html = page.decode()
        assert "<title>Log in · contextviewer</title>" in html and '<section class="login">' in html  # templates/registration
        assert '<link rel="stylesheet" href="/static/contextviewer/app.css">' in html
        status, css, _ = _get(opener, f"{base}/static/contextviewer/app.css")
        assert status == 200 and css == (ROOT / "static" / "contextviewer" / "app.css").read_bytes()

        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
        status, page, url = _get(opener, f"{base}/login/", {"csrfmiddlewaretoken": token, "username": "lead",
                                                            "password": "wheel-pass-1234", "next": ""})
        assert status == 200 and urllib.parse.urlparse(url).path == "/", (status, url, page[:2000])
        assert b'<a class="brand" href="/">contextviewer</a>' in page and b"lead" in page  # base.html, signed in
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait(timeout=10)
        left = _venv_processes(venv)
        for proc in left:  # (not left behind even when the assertion below fails)
            proc.kill()
    assert serve.returncode == 0, log.read_text()[-3000:]
    assert left == [], f"left running after serve stopped: {[p.cmdline() for p in left]}"
