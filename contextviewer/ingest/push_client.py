#!/usr/bin/env python3
"""push.py: send this machine's agent sessions to a contextviewer server.

    python3 push.py --server https://cv.example.org --token cv_... [--watch] [--mask] [FOLDERS | auto]

One file, Python 3.10+ and its standard library only: nothing to install. The server serves it at
/push.py with each agent's default folders (``auto``) and its secret-masking rules filled in;
``manage.py push`` runs the same code from the project.

It sends only what is new: a whole new file, or the bytes a growing one appended, each checked
against the sha256 of what the server holds (a mismatch: the whole file again). What it sent is
kept in a state file (~/.local/state/contextviewer-push/state.json, or --state), with the client
id it made the first time. A dropped connection is retried, the same request again, until
--retry-for seconds have passed; sending twice stores once. ``--mask``: secrets are masked on this
machine, line by line with the server's own rules, before anything is sent (a file that is not text,
such as a database, is then not sent). ``--watch``: keep looking, and send what is written within
about a second.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import socket
import sys
import time
import types
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

# Filled in by the server when it serves this file (contextviewer/ingest/push_script.py); manage.py
# push passes the project's own instead.
LOCATIONS = None  # each agent's default folders, for `auto`
SECRETS_SOURCE = None  # the text of the server's contextviewer/core/secrets.py (--mask)

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
READ = 1 << 20
DEFAULT_CHUNK = 8 * 1024 * 1024  # bytes in one request, at most (and never over the server's cap)
QUIET = 2.0  # --mask: a last line with no line end is sent once the file has been still this long
STATE_VERSION = 1


class PushError(Exception):
    pass


class FileRefused(PushError):
    """The server refuses this one file (an unsafe name, a line over the upload cap): the others go on."""


class Conflict(Exception):
    def __init__(self, size: int, sha256: str):
        super().__init__(f"the server holds {size} bytes ({sha256[:12]}…)")
        self.size, self.sha256 = size, sha256


def default_state() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "contextviewer-push" / "state.json"


def load_secrets(source: str | None = None) -> types.ModuleType | None:
    """The server's masking rules (its secrets.py, shipped in this file), as a module."""
    source = source if source is not None else SECRETS_SOURCE
    if not source:
        return None
    module = types.ModuleType("contextviewer_secrets")
    module.__dict__["__name__"] = "contextviewer_secrets"
    sys.modules.setdefault("contextviewer_secrets", module)
    exec(compile(source, "contextviewer/core/secrets.py", "exec"), module.__dict__)
    return module


# -- the state file ---------------------------------------------------------------------------


class State:
    """What was sent, by server (and project): per file, the local bytes consumed and their sha256,
    and the size and sha256 the server holds. Written after every request that stored something."""

    def __init__(self, path: Path):
        self.path = path
        data = {}
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            pass
        self.client_id = data.get("client_id") or uuid.uuid4().hex
        self.servers = data.get("servers") or {}
        if not data:
            self.save()

    def files(self, key: str) -> dict:
        return self.servers.setdefault(key, {}).setdefault("files", {})

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"version": STATE_VERSION, "client_id": self.client_id, "servers": self.servers}))
        os.replace(tmp, self.path)


# -- the server -------------------------------------------------------------------------------


class Server:
    """The push API, each request retried on a dropped connection or an unavailable server until
    ``retry_for`` seconds have passed (requests are idempotent: the same one twice stores once)."""

    def __init__(self, url: str, token: str, project: str | None, client_id: str, retry_for: float, log):
        self.url = url.rstrip("/")
        self.token = token
        self.project = project
        self.client_id = client_id
        self.hostname = socket.gethostname()
        self.retry_for = retry_for
        self.log = log

    def _query(self, **params) -> str:
        params = {k: v for k, v in params.items() if v is not None}
        if self.project:
            params["project"] = self.project
        return urllib.parse.urlencode(params)

    def _request(self, method: str, path: str, query: str, body: bytes | None = None) -> tuple[int, dict]:
        url = f"{self.url}/api{path}?{query}"
        deadline = time.monotonic() + self.retry_for
        wait = 0.2
        while True:
            req = urllib.request.Request(url, data=body, method=method, headers={
                "Authorization": f"Bearer {self.token}", "Accept": "application/json",
                "Content-Type": "application/octet-stream",
            })
            try:
                with urllib.request.urlopen(req, timeout=120) as resp:
                    return resp.status, json.loads(resp.read() or b"{}")
            except urllib.error.HTTPError as exc:
                if exc.code in (502, 503, 504) and time.monotonic() < deadline:
                    reason = f"the server answered {exc.code}"
                else:
                    try:
                        data = json.loads(exc.read() or b"{}")
                    except ValueError:
                        data = {}
                    return exc.code, data if isinstance(data, dict) else {}
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError, socket.timeout, TimeoutError) as exc:
                if time.monotonic() >= deadline:
                    raise PushError(f"{self.url}: {getattr(exc, 'reason', exc)} (retried for {self.retry_for:.0f} s)") from exc
                reason = str(getattr(exc, "reason", exc))
            self.log(f"connection lost ({reason}): trying again in {wait:.1f} s")
            time.sleep(wait)
            wait = min(wait * 2, 5.0)

    def config(self) -> dict:
        status, data = self._request("GET", "/push/config", self._query())
        if status != 200:
            raise PushError(f"{self.url}: {status} {data.get('detail', '')}".strip())
        return data

    def held(self, rel: str) -> tuple[int, str]:
        status, data = self._request("GET", "/push/files", self._query(client=self.client_id, path=rel, hostname=self.hostname))
        if status != 200:
            raise (FileRefused if status in (400, 413) else PushError)(f"{rel}: {status} {data.get('detail', '')}".strip())
        return int(data["size"]), data["sha256"]

    def send(self, rel: str, offset: int, sha256: str, data: bytes, complete: bool) -> dict:
        query = self._query(client=self.client_id, path=rel, offset=offset, sha256=sha256 if offset else "",
                            complete="true" if complete else "false", hostname=self.hostname)
        status, answer = self._request("PUT", "/push/files", query, data)
        if status == 409:
            raise Conflict(int(answer.get("size") or 0), answer.get("sha256") or EMPTY_SHA256)
        if status != 200:
            raise (FileRefused if status in (400, 413) else PushError)(f"{rel}: {status} {answer.get('detail', '')}".strip())
        return answer


# -- what a file holds to send ----------------------------------------------------------------


def _looks_binary(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return b"\0" in fh.read(8192)
    except OSError:
        return False


def prefix_sha(path: Path, size: int) -> str | None:
    """sha256 of the first ``size`` bytes of ``path`` (None: it holds fewer)."""
    digest = hashlib.sha256()
    left = size
    with open(path, "rb") as fh:
        while left > 0:
            chunk = fh.read(min(READ, left))
            if not chunk:
                return None
            digest.update(chunk)
            left -= len(chunk)
    return digest.hexdigest()


def mask_bytes(data: bytes, secrets) -> bytes:
    """Complete lines, each masked alone (mask_line)."""
    return b"\n".join(mask_line(line.decode("utf-8", "surrogateescape"), secrets).encode("utf-8", "surrogateescape")
                      for line in data.split(b"\n"))


def mask_line(text: str, secrets) -> str:
    """A log's line masked as the server masks what it imports (ingest/prepare.py): the raw line
    (secrets.mask_raw), and the values found in its decoded JSON (a secret its escapes hide from
    the raw line, a PEM block's lines) masked wherever they stand in it, escaped or not."""
    found: dict = {}
    masked = secrets.mask_raw(text, found)[0] if secrets.may_hold_secret(text) or "\\u00" in text else text
    if "\\" in text:  # JSON escapes: the decoded strings may hold what the raw line hides
        try:
            secrets.mask_value(json.loads(text), found)
        except (ValueError, RecursionError):
            pass
    if found:
        masked = secrets.ValueMasker(found, every=True).mask(masked)[0]
    return masked


def pieces(path: Path, start: int, end: int, chunk: int, secrets, quiet: bool):
    """(local end, bytes to send) from ``start`` up to ``end`` in parts of about ``chunk`` bytes.
    Masked: whole lines only, each masked (a last line with no line end once the file is ``quiet``)."""
    with open(path, "rb") as fh:
        fh.seek(start)
        at = start
        while at < end:
            data = fh.read(min(chunk, end - at))
            if not data:
                return
            if secrets is not None:
                cut = data.rfind(b"\n")
                while cut < 0 and at + len(data) < end:  # a line longer than a chunk: read on to its end
                    more = fh.read(min(chunk, end - at - len(data)))
                    if not more:
                        break
                    data += more
                    cut = data.rfind(b"\n")
                if at + len(data) < end or not quiet:
                    if cut < 0:
                        return  # a line still being written
                    fh.seek(at + cut + 1)
                    data = data[: cut + 1]
                data = data, mask_bytes(data, secrets)
            else:
                data = data, data
            at += len(data[0])
            yield at, data[1]


# -- pushing ----------------------------------------------------------------------------------


class Pusher:
    def __init__(self, server: Server, state: State, roots: list[Path], *, secrets=None, chunk: int = DEFAULT_CHUNK, log=print):
        self.server = server
        self.state = state
        self.roots = roots
        self.secrets = secrets
        self.chunk = chunk
        self.log = log
        self.key = f"{server.url} {server.project or ''}".strip() + (" masked" if secrets is not None else "")
        self.sent_files = 0
        self.sent_bytes = 0

    def files(self):
        """(file, its path as the server keeps it) for every file under the roots; the path is the
        root's own relative to the home folder (else absolute, without its leading /) and the
        file's under it, so two roots never share a name and the agents' layout is kept."""
        home = Path.home()
        for root in self.roots:
            try:
                label = root.relative_to(home).as_posix()
            except ValueError:
                label = root.as_posix().lstrip("/")
            for folder, dirs, names in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(names):
                    if name.startswith("."):
                        continue
                    path = Path(folder) / name
                    if path.is_symlink() and not path.resolve().is_relative_to(root):
                        continue  # a link out of the folder (to ~/.ssh, /etc) is not followed, as a folder import does not
                    yield path, f"{label}/{path.relative_to(root).as_posix()}"

    def run_once(self) -> int:
        """One pass over every file; the number of files something was sent of."""
        changed = 0
        for path, rel in self.files():
            try:
                if self.push_file(path, rel):
                    changed += 1
            except FileRefused as exc:
                self.log(f"not sent: {exc}")
            except OSError as exc:
                self.log(f"{path}: not read ({exc.strerror or exc})")
        return changed

    def push_file(self, path: Path, rel: str) -> bool:
        """Send what is new of one file; True when the server stored something of it."""
        files = self.state.files(self.key)
        st = path.stat()
        entry = files.get(str(path))
        if entry and (entry.get("rel"), entry.get("size"), entry.get("mtime"), entry.get("done")) == (
                rel, st.st_size, st.st_mtime_ns, st.st_size):
            return False  # unchanged since it was sent
        if self.secrets is not None and _looks_binary(path):
            if not (entry and entry.get("binary")):  # said once, not at every write
                self.log(f"{path}: not sent with --mask (not a text file: its secrets cannot be masked line by line)")
            files[str(path)] = {"rel": rel, "size": st.st_size, "mtime": st.st_mtime_ns, "done": st.st_size, "binary": True}
            self.state.save()
            return False
        quiet = time.time() - st.st_mtime_ns / 1e9 >= QUIET
        start, offset, held_sha = self._resume(path, rel, entry, st.st_size)
        # Where it stands before sending (an empty file, a line still being written: nothing to send
        # yet), so that the next look starts from here without asking the server again.
        mark = {"rel": rel, "done": start, "sent": offset, "sent_sha": held_sha, "size": st.st_size, "mtime": st.st_mtime_ns}
        if self.secrets is not None:
            mark["local_sha"] = prefix_sha(path, start)
        if files.get(str(path)) != mark:
            files[str(path)] = mark
            self.state.save()
        stored = 0
        for attempt in (1, 2):
            try:
                for (at, data), last in _with_last(pieces(path, start, st.st_size, self.chunk, self.secrets, quiet)):
                    answer = self.server.send(rel, offset, held_sha, data, last)
                    offset, held_sha = int(answer["size"]), answer["sha256"]
                    stored += int(answer.get("stored") or 0)
                    files[str(path)] = {"rel": rel, "done": at, "sent": offset, "sent_sha": held_sha,
                                        "size": st.st_size, "mtime": st.st_mtime_ns}
                    if self.secrets is not None:
                        files[str(path)]["local_sha"] = prefix_sha(path, at)
                    self.state.save()
                break
            except Conflict:
                if attempt == 2:
                    raise PushError(f"{path}: the server refused the whole file too") from None
                start, offset, held_sha = 0, 0, EMPTY_SHA256  # the server holds something else: the whole file again
        self.sent_bytes += stored
        if stored:
            self.sent_files += 1
        return bool(stored)

    def _resume(self, path: Path, rel: str, entry: dict | None, size: int) -> tuple[int, int, str]:
        """(local offset, server offset, sha256 held) to go on from: where the last push stopped
        when the file only grew since; else what the server holds of it when that is this file's
        beginning (the state file lost, another --state); else the start."""
        if entry and entry.get("rel") == rel and "sent_sha" in entry and entry.get("done", size + 1) <= size:
            if self.secrets is None:
                same = prefix_sha(path, entry["sent"]) == entry["sent_sha"]
            else:
                same = prefix_sha(path, entry["done"]) == entry.get("local_sha")
            if same:
                return entry["done"], entry["sent"], entry["sent_sha"]
        held_size, held_sha = self.server.held(rel)
        if held_size and self.secrets is None and held_size <= size and prefix_sha(path, held_size) == held_sha:
            return held_size, held_size, held_sha
        if held_size and self.secrets is not None:
            local = _local_offset_of(path, held_size, held_sha, self.secrets)
            if local is not None:
                return local, held_size, held_sha
        return 0, 0, EMPTY_SHA256


def _with_last(iterable):
    """Each item with whether it is the last."""
    it = iter(iterable)
    try:
        prev = next(it)
    except StopIteration:
        return
    for item in it:
        yield prev, False
        prev = item
    yield prev, True


def _local_offset_of(path: Path, masked_size: int, masked_sha: str, secrets) -> int | None:
    """The local offset whose lines, masked, are the ``masked_size`` bytes the server holds (None:
    the server holds something else)."""
    digest = hashlib.sha256()
    total = local = 0
    with open(path, "rb") as fh:
        for line in fh:
            if not line.endswith(b"\n"):
                return None
            masked = mask_bytes(line, secrets)
            digest.update(masked)
            total += len(masked)
            local += len(line)
            if total == masked_size:
                return local if digest.hexdigest() == masked_sha else None
            if total > masked_size:
                return None
    return None


def roots_from(values: list[str], locations: list[str]) -> list[Path]:
    out: list[Path] = []
    for value in values or ["auto"]:
        found = [Path(loc).expanduser() for loc in locations] if value == "auto" else [Path(value).expanduser()]
        for path in found:
            path = path.resolve()
            if path.is_dir() and path not in out:
                out.append(path)
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="push.py", description="Send this machine's agent sessions to a contextviewer server.")
    add_arguments(p)
    return p


def add_arguments(p) -> None:
    p.add_argument("folders", nargs="*", help="folders to push (default: auto, each agent's default folders)")
    p.add_argument("--server", required=True, help="the server's address, e.g. https://cv.example.org")
    p.add_argument("--token", default=os.environ.get("CONTEXTVIEWER_PUSH_TOKEN"),
                   help="an API token (a push-only token will do); default: $CONTEXTVIEWER_PUSH_TOKEN")
    p.add_argument("--project", help="the project's slug (default: the token's project)")
    p.add_argument("--watch", action="store_true", help="keep looking, and send what is written as it is written")
    p.add_argument("--mask", action="store_true", help="mask secrets on this machine before anything is sent")
    p.add_argument("--state", type=Path, default=None, help="the state file (default: ~/.local/state/contextviewer-push/state.json)")
    p.add_argument("--interval", type=float, default=0.5, help="--watch: seconds between looks (default 0.5)")
    p.add_argument("--retry-for", dest="retry_for", type=float, default=300.0, help="seconds to retry a dropped connection (default 300)")
    p.add_argument("--chunk-bytes", dest="chunk_bytes", type=int, default=DEFAULT_CHUNK, help="bytes in one request at most")
    p.add_argument("--quiet", action="store_true", help="say only what went wrong")


def run(opts, *, locations=None, secrets=None, out=None) -> int:
    """push.py's work, for the command line and for manage.py push (its own locations and rules)."""
    out = out or sys.stdout
    locations = list(locations if locations is not None else (LOCATIONS or []))

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    def say(text: str) -> None:
        if not opts.quiet:
            print(text, file=out, flush=True)

    if not opts.token:
        log("push.py: give --token (or set CONTEXTVIEWER_PUSH_TOKEN)")
        return 2
    if opts.mask:
        secrets = secrets if secrets is not None else load_secrets()
        if secrets is None:
            log("push.py: --mask needs the server's masking rules: download push.py from the server (/push.py)")
            return 2
    else:
        secrets = None
    state = State(opts.state or default_state())
    server = Server(opts.server, opts.token, opts.project, state.client_id, opts.retry_for, log)
    try:
        config = server.config()
        if not locations:
            locations = config.get("locations") or []
        roots = roots_from(opts.folders, locations)
        if not roots:
            log("push.py: no folder to push (none of the named folders exists)")
            return 1
        chunk = max(1, min(opts.chunk_bytes, int(config.get("max_request_bytes") or opts.chunk_bytes)))
        pusher = Pusher(server, state, roots, secrets=secrets, chunk=chunk, log=log)
        say(f"pushing {', '.join(str(r) for r in roots)} to {server.url} (project {config.get('project')})"
            + (", secrets masked here" if secrets is not None else ""))
        pusher.run_once()
        say(f"sent {pusher.sent_bytes} bytes of {pusher.sent_files} files")
        while opts.watch:
            time.sleep(opts.interval)
            before = pusher.sent_bytes
            try:
                if pusher.run_once():
                    say(f"sent {pusher.sent_bytes - before} bytes")
            except PushError as exc:  # watching: the server down longer than --retry-for; the next pass tries again
                log(f"push.py: {exc}")
    except PushError as exc:
        log(f"push.py: {exc}")
        return 1
    except KeyboardInterrupt:
        return 0
    return 0


def main(argv=None) -> int:
    return run(parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
