"""push.py (issue 38, item 2): a developer's sessions sent to the server by the script it serves.

The server is a real HTTP server on 127.0.0.1 (pytest-django's live_server; gunicorn where a test
kills it mid-push), its imports run by a real Celery worker. The client is the /push.py the server
serves, run as a separate `python3` process (no Django, no project on its path), or its code called
in this process (push_client.run) where only the server's side is in question.

What must hold: a new file arrives whole and is imported; the bytes a growing file appended are
all that is sent again, and join its conversation; a push killed mid-way by the server going down
resumes when it is back and everything arrives once; twice is once (the same chunk, the same run,
a lost state file); `--mask` sends no piece of any secret the server masks, and what it sends equals
the server's own masking; a push-only token is refused by every other operation and page, and in
any other project; a request over the upload cap is refused with 413."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import re
import signal
import socket
import string
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client

from contextviewer.accounts import services as accounts
from contextviewer.accounts.models import Membership, Project, PushClient, Role, TokenScope
from contextviewer.conversations.models import Conversation
from contextviewer.core import secrets
from contextviewer.ingest import files as ingest, push_client
from contextviewer.ingest.models import PushFile
from contextviewer.ingest.push import client_root
from contextviewer.ingest.watch import auto_locations
from contextviewer.jobs.models import Job, JobStatus
from tests.sessions import SessionBuilder, session_lines, write_lines
from tests.upload_folders import write_upload_folder
from tests.worker import ROOT, free_port, job_state, start_gunicorn, wait_for, worker_env

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ALNUM = string.ascii_letters + string.digits


# -- helpers --------------------------------------------------------------------------------------


def _token(user, project, scope: str = TokenScope.PUSH) -> str:
    return accounts.create_token(user, project, f"push {scope or 'api'}", "30", scope=scope)[1]


def _http(method: str, url: str, token: str | None = None, body: bytes | None = None) -> tuple[int, dict | str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            status, data = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, data = exc.code, exc.read()
    try:
        return status, json.loads(data)
    except ValueError:
        return status, data.decode("utf-8", "replace")


def _session(folder: Path, session_id: str, turns: int) -> tuple[Path, SessionBuilder]:
    builder = SessionBuilder(session_id=session_id)
    path = folder / f"{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_lines(path, session_lines(turns, builder))
    return path, builder


def _push(server: str, token: str, folders: list[Path], state: Path, *extra: str, project: str | None = None) -> int:
    """push.py's code, in this process (the server's side is what is tested)."""
    argv = ["--server", server, "--token", token, "--state", str(state), "--quiet", "--retry-for", "5",
            *(["--project", project] if project else []), *extra, *map(str, folders)]
    opts = push_client.parser().parse_args(argv)
    return push_client.run(opts, locations=auto_locations(), secrets=secrets)


def _script(server: str, tmp_path: Path) -> Path:
    """/push.py as the server serves it, saved where a developer would save it."""
    with urllib.request.urlopen(f"{server}/push.py", timeout=60) as resp:
        assert resp.headers["Content-Type"].startswith("text/x-python")
        text = resp.read()
    path = tmp_path / "laptop" / "push.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text)
    return path


def _script_env(tmp_path: Path) -> dict:
    """A developer's environment: no project on the path, no Django settings, its own home."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "CONTEXTVIEWER", "PYTHONPATH"))}
    env["HOME"] = str(tmp_path / "home")
    return env


def _held(project: Project) -> dict[str, bytes]:
    """Every pushed file's held bytes, by its path as the client names it."""
    out = {}
    for row in PushFile.objects.filter(client__project=project).select_related("client"):
        out[row.path] = (client_root(project, row.client.client_id) / row.path).read_bytes()
    return out


def _wait_imported(project: Project, worker, count: int | None = None, timeout: float = 120):
    """Every job done (the imports and what follows them: the database is emptied after the test,
    which must not meet a job still writing), and ``count`` sessions in ``project``."""
    def done():
        if Job.objects.exclude(status__in=[JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED]).exists():
            return False
        return count is None or Conversation.objects.filter(project=project, parent__isnull=True).count() >= count

    wait_for(done, timeout=timeout, message="the imports",
             describe=lambda: job_state(Job.objects.all(), worker))
    assert not Job.objects.filter(kind="import", status=JobStatus.FAILED).exists(), \
        list(Job.objects.filter(kind="import").values("status", "error"))


def _messages(project: Project) -> dict[str, int]:
    return {c.external_id: c.message_count for c in Conversation.objects.filter(project=project, parent__isnull=True)}


def _local_rel(root: Path, path: Path, home: Path | None = None) -> str:
    """The path push.py names a file by: its root's own (relative to the home folder, else
    absolute without the leading /) and the file's under it."""
    label = root.relative_to(home).as_posix() if home else root.as_posix().lstrip("/")
    return f"{label}/{path.relative_to(root).as_posix()}"


# -- a new file, then the bytes it appended -------------------------------------------------------


def test_a_new_file_arrives_whole_and_what_it_appends_joins_its_conversation(live_server, worker, project, user, tmp_path):
    folder = tmp_path / "sessions"
    path, builder = _session(folder, "aaaaaaaa-1111-4111-8111-000000000001", turns=3)
    token = _token(user, project)
    state = tmp_path / "state.json"

    assert _push(live_server.url, token, [folder], state) == 0
    _wait_imported(project, worker, count=1)
    held = _held(project)
    assert held == {_local_rel(folder.resolve(), path.resolve()): path.read_bytes()}
    first = _messages(project)
    assert list(first) == [builder.session_id] and first[builder.session_id] > 0
    client = PushClient.objects.get(project=project)
    assert client.user == user and client.hostname == socket.gethostname()
    assert client.bytes_received == path.stat().st_size and client.files_received == 1
    assert client.last_push_at is not None
    # Counted once its import is done (the import's follow-up, after the job's end).
    wait_for(lambda: PushClient.objects.get(pk=client.pk).sessions_received == 1, timeout=30, message="the sessions counted")

    # The agent goes on writing: only the appended bytes are sent, into the same conversation.
    before = path.stat().st_size
    more = [line for i in range(3, 5) for line in builder.turn(i)]
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("\n".join(more) + "\n")
    assert _push(live_server.url, token, [folder], state) == 0
    _wait_imported(project, worker)
    client.refresh_from_db()
    assert client.bytes_received == path.stat().st_size, "more than the appended bytes were sent"
    assert client.bytes_received - before == len(("\n".join(more) + "\n").encode())
    assert _held(project) == {_local_rel(folder.resolve(), path.resolve()): path.read_bytes()}
    assert Conversation.objects.filter(project=project).count() == 1  # not a second conversation
    after = _messages(project)
    assert after[builder.session_id] == first[builder.session_id] + len(more)  # a message a line
    assert after == _messages(_imported_directly(folder))


def test_the_same_chunk_twice_the_same_run_twice_and_a_lost_state_file_store_once(live_server, worker, project, user, tmp_path):
    folder = tmp_path / "sessions"
    path, _ = _session(folder, "aaaaaaaa-1111-4111-8111-000000000002", turns=2)
    token = _token(user, project)
    data = path.read_bytes()
    rel = "x/one.jsonl"
    url = f"{live_server.url}/api/push/files?client=laptop-0001&path={rel}"

    # The same whole file twice (its answer lost, sent again): stored once.
    first = _http("PUT", url + "&offset=0", token, data)
    again = _http("PUT", url + "&offset=0", token, data)
    assert first[0] == again[0] == 200
    assert first[1]["stored"] == len(data) and again[1]["stored"] == 0
    # The same append twice: the second is answered as stored, nothing added.
    tail = b'{"type":"other","n":1}\n'
    sha = hashlib.sha256(data).hexdigest()
    one = _http("PUT", url + f"&offset={len(data)}&sha256={sha}", token, tail)
    two = _http("PUT", url + f"&offset={len(data)}&sha256={sha}", token, tail)
    assert one[0] == two[0] == 200 and one[1]["stored"] == len(tail) and two[1]["stored"] == 0
    assert one[1]["size"] == two[1]["size"] == len(data) + len(tail)
    assert one[1]["sha256"] == two[1]["sha256"] == hashlib.sha256(data + tail).hexdigest()
    assert _held(project)[rel] == data + tail
    # The server holds something else than the client believes: 409, with what it holds.
    stale = _http("PUT", url + f"&offset={len(data)}&sha256={'0' * 64}", token, tail)
    assert stale[0] == 409 and stale[1]["size"] == len(data) + len(tail)
    assert _held(project)[rel] == data + tail

    # push.py twice: the second run sends nothing; with its state file lost, nothing either.
    state = tmp_path / "state.json"
    assert _push(live_server.url, token, [folder], state) == 0
    client = PushClient.objects.get(project=project, client_id=json.loads(state.read_text())["client_id"])
    sent = client.bytes_received
    assert sent == len(data)
    assert _push(live_server.url, token, [folder], state) == 0
    client.refresh_from_db()
    assert client.bytes_received == sent
    saved = json.loads(state.read_text())
    state.write_text(json.dumps({"client_id": saved["client_id"]}))  # what was sent is forgotten
    assert _push(live_server.url, token, [folder], state) == 0
    client.refresh_from_db()
    assert client.bytes_received == sent
    _wait_imported(project, worker)
    assert Conversation.objects.filter(project=project, external_id__endswith="000000000002").count() <= 1


def test_a_file_rewritten_from_its_start_is_sent_whole_again(live_server, worker, project, user, tmp_path):
    folder = tmp_path / "sessions"
    path, _ = _session(folder, "aaaaaaaa-1111-4111-8111-000000000003", turns=3)
    token = _token(user, project)
    state = tmp_path / "state.json"
    assert _push(live_server.url, token, [folder], state) == 0
    first = path.stat().st_size
    # The agent rewrites the file (an edited line): its beginning is not what was sent.
    text = path.read_text()
    assert "Step 1" in text
    path.write_text(text.replace("Step 1", "Step one", 1) + "\n")
    assert _push(live_server.url, token, [folder], state) == 0
    assert list(_held(project).values()) == [path.read_bytes()]
    assert PushClient.objects.get(project=project).bytes_received == first + path.stat().st_size  # the whole file again
    _wait_imported(project, worker, count=1)


def _tree(project: Project) -> dict:
    """Each session with its message count and its sub-agents' (external id, agent, count)."""
    return {
        (c.agent, c.external_id): (c.message_count, sorted((k.external_id, k.message_count) for k in c.children.all()))
        for c in Conversation.objects.filter(project=project, parent__isnull=True)
    }


def test_sub_agents_and_companion_files_are_read_with_their_session_as_a_direct_import_reads_them(
        live_server, worker, project, user, tmp_path):
    folder = write_upload_folder(tmp_path)  # a session with sub-agents and their .meta.json; a session only its meta makes readable
    assert folder.claude_subagents and folder.claude_meta
    assert _push(live_server.url, _token(user, project), [folder.root], tmp_path / "state.json") == 0
    _wait_imported(project, worker, count=2)
    pushed = _tree(project)
    direct = _tree(_imported_directly(folder.root))
    assert pushed == direct
    assert any(children for _, children in pushed.values())  # the sub-agents under their session


def test_manage_py_push_is_the_same_client(live_server, worker, project, user, tmp_path):
    folder = tmp_path / "sessions"
    path, _ = _session(folder, "acacacac-8888-4888-8888-000000000001", turns=2)
    done = subprocess.run(
        [sys.executable, "manage.py", "push", "--server", live_server.url, "--token", _token(user, project),
         "--state", str(tmp_path / "state.json"), "--mask", str(folder)],
        cwd=ROOT, env=worker_env(), capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert f"sent {path.stat().st_size} bytes of 1 files" in done.stdout, done.stdout
    assert list(_held(project).values()) == [path.read_bytes()]  # no secret in it: masked, it is the same
    _wait_imported(project, worker, count=1)


def test_a_link_out_of_the_folder_is_not_followed_and_a_refused_name_stops_only_its_file(live_server, project, user, tmp_path):
    outside = tmp_path / "outside" / "id_rsa"
    outside.parent.mkdir()
    outside.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot-for-the-server\n")
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "leak.jsonl").symlink_to(outside)
    (folder / "bad\x01name.txt").write_text("a name the server refuses\n")
    (folder / "notes.txt").write_text("plain notes: stored, read by no format\n")
    (folder / "empty.jsonl").write_bytes(b"")  # nothing to send yet
    assert _push(live_server.url, _token(user, project), [folder], tmp_path / "state.json") == 0
    held = _held(project)
    assert list(held) == [_local_rel(folder.resolve(), (folder / "notes.txt").resolve())]
    assert not Job.objects.exists()  # nothing a format reads: nothing imported
    # A file where the server holds a folder of that name, or the other way round: refused, said.
    token = _token(user, project)
    url = f"{live_server.url}/api/push/files?client=laptop-0005&offset=0&path="
    assert _http("PUT", url + "w/one.txt", token, b"one\n")[0] == 200
    status, data = _http("PUT", url + "w/one.txt/two.txt", token, b"two\n")
    assert status == 400 and "in the way" in data["detail"], data
    status, data = _http("PUT", url + "w", token, b"three\n")
    assert status == 400 and "in the way" in data["detail"], data
    for bad in ("../escape.txt", "/etc/passwd"):
        status, data = _http("PUT", url + bad, token, b"x\n")
        assert status == 400, (bad, data)


# -- a dropped connection -----------------------------------------------------------------------


def test_a_request_cut_mid_body_stores_nothing_of_it(live_server, project, user):
    token = _token(user, project)
    host, port = live_server.url.removeprefix("http://").split(":")
    body = b'{"type":"other"}\n' * 1000
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            f"PUT /api/push/files?client=laptop-0006&path=cut.jsonl&offset=0 HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body[: len(body) // 2]
        )
        sock.shutdown(socket.SHUT_WR)  # the connection drops half way through the body
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert b" 400 " in answer.split(b"\r\n", 1)[0] and b"nothing of it was stored" in answer, answer[:300]
    assert not PushFile.objects.filter(size__gt=0).exists()
    assert not list((client_root(project, "laptop-0006").parent / ".incoming").glob("laptop-0006-*"))  # nothing left aside
    # Sent again whole, it is stored whole.
    url = f"{live_server.url}/api/push/files?client=laptop-0006&path=cut.jsonl&offset=0"
    status, data = _http("PUT", url, token, body)
    assert status == 200 and data["size"] == len(body) and _held(project) == {"cut.jsonl": body}


def _kill(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def test_a_push_cut_by_the_server_going_down_resumes_and_everything_arrives_once(worker, project, user, tmp_path):
    folder = tmp_path / "home" / ".claude" / "projects" / "-home-dev-app"
    sessions = [_session(folder, f"bbbbbbbb-2222-4222-8222-{n:012d}", turns=4 + n) for n in range(5)]
    big, big_builder = _session(folder, "bbbbbbbb-2222-4222-8222-999999999999", turns=1)
    with open(big, "a", encoding="utf-8") as fh:  # some 6 MB: a hundred requests of 64 KB
        while fh.tell() < 6_000_000:
            fh.write("\n".join(big_builder.turn(big_builder.n)) + "\n")
    token = _token(user, project)
    port = free_port()
    log = tmp_path / "gunicorn.log"
    server = start_gunicorn(port, log)
    url = f"http://127.0.0.1:{port}"
    try:
        script = _script(url, tmp_path)
        client = subprocess.Popen(
            [sys.executable, str(script), "--server", url, "--token", token, "--chunk-bytes", "65536",
             "--retry-for", "180", "--state", str(tmp_path / "state.json"), str(folder)],
            cwd=script.parent, env=_script_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )

        def part_way():
            sizes = list(PushFile.objects.filter(client__project=project).values_list("size", flat=True))
            return sum(sizes) > 1_500_000

        wait_for(part_way, timeout=120, interval=0.02, message="part of the push")
        _kill(server)  # the server goes down mid-push (requests cut, connections refused)
        held_then = sum(PushFile.objects.filter(client__project=project).values_list("size", flat=True))
        time.sleep(1.5)
        assert client.poll() is None, "the client gave up instead of retrying"
        server = start_gunicorn(port, log)  # back
        out, err = client.communicate(timeout=300)
        assert client.returncode == 0, err.decode()
    finally:
        _kill(server) if server.poll() is None else None
    assert b"connection lost" in err, err.decode()
    assert held_then < sum(p.stat().st_size for p in folder.iterdir())
    root = folder.resolve()
    files = [p for p, _ in sessions] + [big]
    home = (tmp_path / "home").resolve()
    assert _held(project) == {_local_rel(root, p.resolve(), home): p.read_bytes() for p in files}  # all, once
    assert next(iter(_held(project))).startswith(".claude/projects/-home-dev-app/")
    _wait_imported(project, worker, count=len(files), timeout=240)
    pushed = PushClient.objects.get(project=project)
    assert pushed.bytes_received == sum(p.stat().st_size for p in files)  # no byte stored twice
    assert pushed.files_received == len(files)
    wait_for(lambda: PushClient.objects.get(pk=pushed.pk).sessions_received == len(files), timeout=30,
             message="the sessions counted")
    counts = _messages(project)
    assert len(counts) == len(files) == Conversation.objects.filter(project=project).count()
    assert counts == _messages(_imported_directly(folder)), "what arrived is not what a direct import of the files gives"


def _imported_directly(folder: Path) -> Project:
    """The same files imported from disk into a project of their own (manage.py import's way)."""
    direct = Project.objects.create(name="Direct", slug="direct")
    ingest.import_path(direct, folder)
    return direct


def _stored(conv: Conversation) -> list:
    return list(conv.messages.order_by("position").values_list("position", "role", "blocks", "raw"))


# -- --mask ---------------------------------------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


JWT_HEADER = base64.urlsafe_b64encode(b'{"alg":"HS256"}').decode().rstrip("=")  # the same in every token: not secret


def _naughty_strings() -> list[str]:
    path = Path(settings.FIXTURES_DIR).parent / "payloads" / "blns.json"
    return json.loads(path.read_text()) if path.is_file() else []


def _planted() -> dict[str, str]:
    """One secret of every kind the server masks (secrets.KINDS), each as a log would hold it."""
    rng = random.Random(38)

    def run(n, alphabet=ALNUM):
        return "".join(rng.choice(alphabet) for _ in range(n))

    body = base64.b64encode(rng.randbytes(48 * 3)).decode()
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body[i:i + 64] for i in range(0, len(body), 64)) + \
        "\n-----END RSA PRIVATE KEY-----"
    key_id = "AKIA" + run(16, string.ascii_uppercase + string.digits)
    planted = {
        "private_key": pem,
        "anthropic_key": "sk-ant-api03-" + run(40),
        "openai_key": "sk-proj-" + run(48),
        "github_token": "ghp_" + run(36),
        "aws_secret_key": "aws_secret_access_key=Qz" + run(38, ALNUM + "/+"),
        "aws_access_key": key_id,
        "slack_token": "xoxb-" + run(12, string.digits) + "-" + run(24),
        "google_api_key": "AIza" + run(35),
        "stripe_key": "sk_live_" + run(24),
        "jwt": ".".join([JWT_HEADER, _b64url(json.dumps({"sub": run(12)}).encode()), _b64url(rng.randbytes(32))]),
        "url_password": f"postgres://deploy:Pw{run(16)}@db.internal:5432/app",
    }
    assert set(planted) == set(secrets.KINDS), "a kind the server masks is not planted: plant it"
    return planted


def _pieces(value: str) -> list[str]:
    """What must not be found of a planted secret: each run of 10+ letters and digits in it (a
    name such as aws_secret_access_key and the PEM's armour are not secret)."""
    value = value.replace("aws_secret_access_key=", "").replace("postgres://deploy:", "").replace("@db.internal:5432/app", "")
    return [r for r in re.findall(r"[A-Za-z0-9]{10,}", value) if "PRIVATE" not in r and r != JWT_HEADER]


def test_mask_sends_no_piece_of_any_secret_and_what_it_sends_is_the_servers_own_masking(live_server, worker, project, user, tmp_path):
    planted = _planted()
    builder = SessionBuilder(session_id="cccccccc-3333-4333-8333-000000000001")
    lines = [builder.user("Deploy it with these:\n" + "\n".join(planted.values()))]
    for i, (kind, value) in enumerate(planted.items()):
        lines += builder.assistant(f"Using the {kind}: {value}", tool=("Bash", {"command": f"echo '{value}'"}))
    lines += builder.turn(1)
    # The big list of naughty strings (../shared/payloads), each beside a secret: hostile text next to it.
    values = list(planted.values())
    lines += [builder.user(f"{naughty} {values[i % len(values)]}") for i, naughty in enumerate(_naughty_strings())]
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = folder / f"{builder.session_id}.jsonl"
    write_lines(path, lines)
    original = path.read_bytes()
    for kind, value in planted.items():  # the planted secrets are ones the server masks
        assert all(p in original.decode() for p in _pieces(value)), kind
        assert not any(p in secrets.mask_raw(json.dumps(value))[0] for p in _pieces(value)), kind

    assert _push(live_server.url, _token(user, project), [folder], tmp_path / "state.json", "--mask") == 0
    [received] = _held(project).values()
    text = received.decode()
    found = [f"{kind}: {p}" for kind, value in planted.items() for p in _pieces(value) if p in text]
    assert not found, found
    # Each line sent is the line the server stores when it imports the original file itself.
    direct = Conversation.objects.get(project=_imported_directly(folder))
    stored_raw = list(direct.messages.order_by("line_no").values_list("raw", flat=True))
    assert len(stored_raw) == len(lines)
    assert received.decode().splitlines() == stored_raw
    _wait_imported(project, worker, count=1)
    # Imported, the masked file gives the conversation the server's import of the original gives
    # (the server masks at import too: masked text masked again is unchanged).
    pushed = Conversation.objects.get(project=project)
    assert pushed.message_count == direct.message_count > len(planted)
    assert _stored(pushed) == _stored(direct)


def test_the_served_script_masks_with_the_servers_rules_and_lists_watch_autos_folders(live_server, tmp_path):
    script = _script(live_server.url, tmp_path)
    text = script.read_text()
    namespace: dict = {"__name__": "push_py"}
    exec(compile(text, str(script), "exec"), namespace)
    assert namespace["LOCATIONS"] == auto_locations()
    assert namespace["SECRETS_SOURCE"] == Path(secrets.__file__).read_text()
    # It runs with no project on its path, and says what it does.
    help_text = subprocess.run([sys.executable, str(script), "--help"], cwd=script.parent, env=_script_env(tmp_path),
                               capture_output=True, text=True, timeout=60)
    assert help_text.returncode == 0 and "--mask" in help_text.stdout and "--watch" in help_text.stdout
    shipped = namespace["load_secrets"]()
    planted = _planted()
    for value in planted.values():
        line = json.dumps({"text": value})
        assert shipped.mask_raw(line) == secrets.mask_raw(line)


# -- the push-only token ----------------------------------------------------------------------------


def _api_operations(exclude_tag: str) -> list[tuple[str, str]]:
    """(method, path) of every API operation but those tagged ``exclude_tag``, path parameters filled."""
    from contextviewer.api import api  # lazy: the API's schema (every app's router) only for this test

    out = []
    for path, methods in api.get_openapi_schema()["paths"].items():
        for method, op in methods.items():
            if exclude_tag not in op.get("tags", []):
                out.append((method.upper(), re.sub(r"\{[^}]+\}", "1", path)))
    return out


def test_a_push_only_token_is_refused_by_every_other_operation_and_page(live_server, worker, project, user, tmp_path):
    push = _token(user, project)
    full = _token(user, project, scope="")
    base = live_server.url
    folder = tmp_path / "sessions"
    _session(folder, "dddddddd-4444-4444-8444-000000000001", turns=2)
    assert _push(base, push, [folder], tmp_path / "state.json") == 0  # what it is for
    assert _http("GET", f"{base}/api/push/config", push)[0] == 200
    refused = []
    for method, path in _api_operations(exclude_tag="push"):
        status, data = _http(method, base + path, push)
        if status != 403 or "push" not in str(data):
            refused.append((method, path, status, str(data)[:200]))
    assert not refused, f"operations a push-only token reached: {refused}"
    assert len(_api_operations(exclude_tag="push")) >= 30  # every app's operations, not a few
    for method, path in [("GET", "/api/conversations"), ("GET", "/api/projects"), ("GET", f"/api/projects/{project.slug}/members")]:
        assert _http(method, base + path, full)[0] == 200, path  # the same user's full token may
    # Pages take no token: with it, a page is the login page, never the project's.
    status, page = _http("GET", f"{base}/", push)
    assert status == 200 and "login" in page.lower() and "dddddddd" not in page
    _wait_imported(project, worker, count=1)


def test_a_push_token_of_another_project_is_refused(live_server, worker, project, user, tmp_path):
    other = Project.objects.create(name="Other", slug="other")
    Membership.objects.create(project=other, user=user, role=Role.MEMBER)
    b_token = _token(user, other)
    url = f"{live_server.url}/api/push/files?client=laptop-0002&path=a.jsonl&project={project.slug}"
    status, data = _http("PUT", url, b_token, b"{}\n")
    assert status == 403, data
    assert _http("GET", url, b_token)[0] == 403
    assert not PushFile.objects.exists()
    # Named nowhere, it pushes into its own project only.
    folder = tmp_path / "sessions"
    _session(folder, "eeeeeeee-5555-4555-8555-000000000001", turns=2)
    assert _push(live_server.url, b_token, [folder], tmp_path / "state.json") == 0
    assert set(PushClient.objects.values_list("project__slug", flat=True)) == {"other"}
    _wait_imported(other, worker, count=1)
    assert not Conversation.objects.filter(project=project).exists()
    # A viewer may not push (no import permission), with a token of any scope.
    viewer = get_user_model().objects.create_user("vera")
    Membership.objects.create(project=project, user=viewer, role=Role.VIEWER)
    assert _http("PUT", url.replace("laptop-0002", "laptop-0003"), _token(viewer, project), b"{}\n")[0] == 403


def test_a_request_over_the_upload_cap_is_refused_with_413_and_push_py_sends_under_it(live_server, worker, project, user,
                                                                                    tmp_path, settings):  # noqa: F811
    settings.MAX_UPLOAD_BYTES = 20_000
    token = _token(user, project)
    url = f"{live_server.url}/api/push/files?client=laptop-0004&path=big.jsonl&offset=0"
    status, data = _http("PUT", url, token, b"x" * 20_001)
    assert status == 413 and "upload limit" in data["detail"], data
    assert not PushFile.objects.filter(size__gt=0).exists()
    folder = tmp_path / "sessions"
    path, _ = _session(folder, "ffffffff-6666-4666-8666-000000000001", turns=40)
    assert path.stat().st_size > 3 * 20_000
    assert _push(live_server.url, token, [folder], tmp_path / "state.json") == 0  # in parts under the cap
    assert list(_held(project).values()) == [path.read_bytes()]
    _wait_imported(project, worker, count=1)


# -- --watch ----------------------------------------------------------------------------------------


def test_with_watch_a_written_line_is_on_the_server_within_two_seconds(live_server, worker, project, user, tmp_path):
    folder = tmp_path / "home" / "sessions"
    path, builder = _session(folder, "abababab-7777-4777-8777-000000000001", turns=2)
    token = _token(user, project)
    full = _token(user, project, scope="")
    script = _script(live_server.url, tmp_path)
    watcher = subprocess.Popen(
        [sys.executable, str(script), "--server", live_server.url, "--token", token, "--watch",
         "--state", str(tmp_path / "state.json"), str(folder)],
        cwd=script.parent, env=_script_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        def listed():
            status, data = _http("GET", f"{live_server.url}/api/conversations", full)
            return data["items"] if status == 200 and data["items"] else None

        [item] = wait_for(listed, timeout=120, message="the session on the server")
        before = item["counts"]["messages"]
        times = []
        for turn in range(2, 5):
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(builder.user(f"Line written at turn {turn}: what now?") + "\n")
            written = time.monotonic()

            def arrived(before=before):
                status, data = _http("GET", f"{live_server.url}/api/conversations/{item['id']}", full)
                return status == 200 and data["counts"]["messages"] > before and data["counts"]["messages"]

            before = wait_for(arrived, timeout=30, interval=0.05, message="the written line on the server")
            times.append(time.monotonic() - written)
        print(f"seconds from the write to the API: {[round(t, 2) for t in times]}")
        assert max(times) < 2.0, f"seconds from the write to the API: {times}"
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
    _wait_imported(project, worker)


# -- who sees the push clients --------------------------------------------------------------------


def test_the_members_page_shows_each_members_push_clients_to_owners_and_their_own_to_members(project, user):
    member = get_user_model().objects.create_user("bob")
    Membership.objects.create(project=project, user=member, role=Role.MEMBER)
    PushClient.objects.create(project=project, user=user, client_id="alice-laptop-01", hostname="alice-laptop",
                              sessions_received=7, files_received=9)
    PushClient.objects.create(project=project, user=member, client_id="bob-desktop-001", hostname="bob-desktop",
                              sessions_received=2)
    owner, bob = Client(), Client()
    owner.force_login(user)
    bob.force_login(member)
    page = owner.get(f"/projects/{project.slug}/members/").content.decode()
    assert "alice-laptop" in page and "bob-desktop" in page and "never" in page
    assert re.search(r"alice-laptop</td>\s*<td[^>]*>never</td>\s*<td>7</td>", page)
    mine = bob.get(f"/projects/{project.slug}/members/").content.decode()
    assert "bob-desktop" in mine and "alice-laptop" not in mine


def test_a_push_only_token_is_made_on_the_tokens_page(project, user):
    owner = Client()
    owner.force_login(user)
    r = owner.post(f"/projects/{project.slug}/tokens/", {"name": "laptop", "lifetime": "90", "scope": "push"})
    assert r.status_code == 201
    row = user.api_tokens.get(name="laptop")
    assert row.scope == TokenScope.PUSH
    assert "push only" in r.content.decode()

