"""Token counting, offline: tiktoken with the rank files shipped in the bpe-openai wheel.

tiktoken downloads its rank files on first use, and there is no network here. The bpe-openai wheel
ships the same files gzipped; decompressed, their sha256 is the one tiktoken checks. tiktoken looks
for a file named sha1(download URL) in TIKTOKEN_CACHE_DIR, so `ensure_encodings` writes the files
there under those names and plain `tiktoken.get_encoding` works offline and still verifies them.

Every count here is an ESTIMATE of what the provider's tokenizer would say (Claude and Gemini use
their own tokenizers). The measured truth is the usage of a model call; see budget.py.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import marshal
import math
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

DEFAULT_ENCODING = "o200k_base"

# name -> (tiktoken's cache file name = sha1 of the URL in tiktoken_ext/openai_public.py, sha256 of the file)
ENCODING_FILES: dict[str, tuple[str, str]] = {
    "o200k_base": (
        "fb374d419588a4632f3f557e76b4b70aebbca790",  # sha1(".../encodings/o200k_base.tiktoken")
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",  # sha1(".../encodings/cl100k_base.tiktoken")
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}
ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"

# Categories of a window, in display order. "free" and "output_reserve" only appear on gauges.
CATEGORIES: tuple[str, ...] = (
    "system_prompt",
    "tool_definitions",
    "harness_overhead",
    "summary",
    "user",
    "assistant",
    "thinking",
    "tool_calls",
    "tool_results",
    "media",
    "other",
)
GAUGE_CATEGORIES: tuple[str, ...] = CATEGORIES + ("free", "output_reserve")
LABELS: dict[str, str] = {
    "system_prompt": "system prompt",
    "tool_definitions": "tool definitions",
    "harness_overhead": "harness overhead (not in log)",
    "summary": "summary",
    "user": "user text",
    "assistant": "assistant text",
    "thinking": "thinking",
    "tool_calls": "tool calls",
    "tool_results": "tool results",
    "media": "media",
    "other": "other",
    "free": "free",
    "output_reserve": "output reserve",
}

# Record types an importer may give system-role messages whose text really is the system prompt
# or the tool definitions (plain message arrays, agent frameworks). Claude Code's "system" lines are
# notices, not the prompt, and count as "other".
SYSTEM_PROMPT_RECORD_TYPES = frozenset({"system_prompt", "instructions"})
TOOL_DEFINITIONS_RECORD_TYPES = frozenset({"tool_definitions", "tools"})

# Images, Anthropic's rule: tokens ~= width * height / 750, after the image is scaled down so its
# long edge is at most 1568 px and it stays under ~1.15 megapixels (~1,600 tokens). The width and
# height come from the image's header (images.py), read by the importers.
IMAGE_PIXELS_PER_TOKEN = 750
IMAGE_MAX_EDGE = 1568
IMAGE_MAX_PIXELS = 1_200_000  # 1,600 tokens; Anthropic's table: 1092 x 1092 (1.19 MP) ~ 1,590 tokens
IMAGE_MAX_TOKENS = 1_600
# With no dimensions (the log keeps only base64 data), the heuristic is: decoded bytes = base64
# length * 3/4, and a compressed screenshot (PNG/JPEG, what coding agents mostly carry) holds about
# 0.5 byte per pixel; pixels / 750, capped at the 1,600 tokens of a full-size image. With no size at
# all (an image inside a tool result), a typical full-size image: 1,600 tokens.
IMAGE_BYTES_PER_PIXEL = 0.5
IMAGE_DEFAULT_TOKENS = IMAGE_MAX_TOKENS

# Parallel counting only pays off on large batches (thread start-up, 2 cores here).
PARALLEL_MIN_CHARS = 256 * 1024
DEFAULT_THREADS = 2
# The fast path for very long texts (opt-in): count in pieces of about this many characters, cut
# after a newline; the count may differ from the exact one by a token or two per cut.
CHUNK_CHARS = 64 * 1024


# ---------------------------------------------------------------------------- encodings


def _wheel_data_dir() -> Path | None:
    """bpe_openai/data without importing bpe_openai (its import loads a Rust extension)."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        data = Path(location) / "data"
        if data.is_dir():
            return data
    return None


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def ensure_encodings(cache_dir: Path | str, names: Iterable[str] = tuple(ENCODING_FILES)) -> None:
    """Place the rank files in `cache_dir` under tiktoken's cache names, and point
    TIKTOKEN_CACHE_DIR at it, so `tiktoken.get_encoding` never touches the network.

    A file already there with the right hash is left alone; a missing or corrupt one is written
    atomically (temporary file + os.replace), so concurrent processes never see half a file.
    """
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    data_dir: Path | None = None
    for name in names:
        cache_name, sha256 = ENCODING_FILES[name]
        target = cache_dir / cache_name
        if target.is_file() and _sha256_file(target) == sha256:
            continue
        if data_dir is None:
            data_dir = _wheel_data_dir()
        source = data_dir / f"{name}.tiktoken.gz" if data_dir else None
        if source is None or not source.is_file():
            raise FileNotFoundError(
                f"{name}: no rank file in {cache_dir} and none in the bpe-openai wheel; install bpe-openai"
            )
        data = gzip.decompress(source.read_bytes())
        if hashlib.sha256(data).hexdigest() != sha256:
            raise ValueError(f"{source}: decompressed rank file does not have the hash tiktoken expects")
        fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=f".{cache_name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)  # mkstemp makes it 0600; the web server and workers may differ
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)


def default_cache_dir() -> Path:
    """TIKTOKEN_CACHE_DIR if set (the Django setting exports it), else a folder in the temp dir."""
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / "contextviewer-tiktoken"


def _constructor_args(name: str, cache_dir: Path) -> dict:
    """tiktoken's arguments for `Encoding(...)` (pattern, ranks, special tokens), from a marshal
    copy beside the rank file when there is one: tiktoken parses the 200,000 base64 lines of the rank
    file in Python (0.16 s here) where marshal reads the same dict in 0.04 s. The copy is made from
    the verified rank file (placed by ensure_encodings first, when there is no copy), names the rank file's hash, tiktoken's version and Python's, and is
    written atomically; a copy that does not match is made again."""
    import sys

    import tiktoken
    from tiktoken_ext import openai_public

    cache_name, sha256 = ENCODING_FILES[name]
    stamp = f"{sha256}:{tiktoken.__version__}:{sys.version_info[0]}.{sys.version_info[1]}"
    path = cache_dir / f"{cache_name}.args.marshal"
    try:
        found = marshal.loads(path.read_bytes())
        if isinstance(found, dict) and found.get("stamp") == stamp and isinstance(found.get("args"), dict):
            return found["args"]
    except (OSError, ValueError, EOFError, TypeError):
        pass
    ensure_encodings(cache_dir, (name,))
    args = openai_public.ENCODING_CONSTRUCTORS[name]()  # reads the rank file tiktoken verifies by its hash
    fd, tmp = tempfile.mkstemp(dir=cache_dir, prefix=f".{cache_name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps({"stamp": stamp, "args": args}))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError:  # a read-only cache: counting works, the next start parses again
        try:
            os.unlink(tmp)
        except OSError:
            pass
    return args


_LOADING = threading.Lock()
_ENCODINGS: dict[str, Any] = {}  # name -> Encoding, loaded in this process
# Set by defer_preload(): another process of this import loads the encoding and counts.
_PRELOAD_DEFERRED = False


def get_encoding(name: str = DEFAULT_ENCODING):
    """The tiktoken Encoding, loaded once per process (rank files placed offline first); threads
    asking while it loads wait for that one load (preload_encoding)."""
    found = _ENCODINGS.get(name)
    if found is not None:
        return found
    with _LOADING:
        found = _ENCODINGS.get(name)
        if found is None:
            found = _ENCODINGS[name] = _load_encoding(name)
        return found


def loaded(name: str = DEFAULT_ENCODING) -> bool:
    """Whether this process has the encoding loaded (without loading it)."""
    return name in _ENCODINGS


def defer_preload() -> None:
    """This process leaves the encoding to another process: `manage.py import` forks its parsing
    process first thing (ingest/early.py), and that process loads the encoding and counts the
    tokens on the other core while this one sets Django up. From now on preload_encoding() does
    nothing here unless forced; the encoding still loads here on first use (get_encoding)."""
    global _PRELOAD_DEFERRED
    _PRELOAD_DEFERRED = True


def preload_encoding(name: str = DEFAULT_ENCODING, *, force: bool = False, then: Callable[[], None] | None = None) -> None:
    """Start loading the encoding on a daemon thread (0.15 s, mostly tiktoken building its tables:
    it holds the GIL, so it slows this process's other threads meanwhile), for work that will count
    tokens after other work: the import starts it before it reads. ``then`` is called once it is
    loaded. Nothing happens after defer_preload() unless ``force``."""
    if _PRELOAD_DEFERRED and not force:
        return

    def load() -> None:
        get_encoding(name)
        if then is not None:
            then()

    threading.Thread(target=load, name="preload-encoding", daemon=True).start()


def _load_encoding(name: str):
    import tiktoken

    if name not in ENCODING_FILES:
        return tiktoken.get_encoding(name)
    cache_dir = default_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)  # as ensure_encodings does, for tiktoken's own loads
    # The marshal copy when it is there (made from the verified rank file); else the rank file is
    # placed and verified first (ensure_encodings: hashing it takes 5-10 ms of every start).
    return tiktoken.Encoding(**_constructor_args(name, cache_dir))


# ---------------------------------------------------------------------------- counting


def _pieces(text: str, size: int) -> list[str]:
    """Cut a long text into pieces of about `size` characters, after a newline where there is one."""
    pieces = []
    start, n = 0, len(text)
    while n - start > size:
        cut = text.rfind("\n", start + size // 2, start + size)
        end = cut + 1 if cut != -1 else start + size
        pieces.append(text[start:end])
        start = end
    pieces.append(text[start:])
    return pieces


def count_text(text: str, encoding: str = DEFAULT_ENCODING, *, approximate_over: int | None = None) -> int:
    """Tokens in `text`, exact by default.

    Special-token strings such as "<|endoftext|>" in transcript text are counted as ordinary text
    (encode_ordinary), never rejected. With `approximate_over`, a text longer than that many
    characters is counted in pieces (faster on multi-megabyte runs, off by a token or two per cut).
    """
    if not text:
        return 0
    enc = get_encoding(encoding)
    if approximate_over is not None and len(text) > approximate_over:
        return sum(len(enc.encode_ordinary(p)) for p in _pieces(text, CHUNK_CHARS))
    return len(enc.encode_ordinary(text))


def _cores_idle(num_threads: int) -> bool:
    """Whether `num_threads` cores look free. Measured here: on 2 busy cores (a worker beside the
    web server, tests) two counting threads fight over the GIL and are slower than one."""
    try:
        cores = len(os.sched_getaffinity(0))
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return True
    others = max(0.0, load - 1.0)  # a long import's own thread is part of the load average
    return cores >= 2 and others + min(num_threads, cores) <= cores + 0.5


def count_texts(
    texts: Iterable[str],
    encoding: str = DEFAULT_ENCODING,
    *,
    num_threads: int = DEFAULT_THREADS,
    approximate_over: int | None = None,
) -> list[int]:
    """Token count per text, in order. Large batches are split into `num_threads` contiguous runs
    of similar size counted in parallel (tiktoken releases the GIL) when the cores are idle; small
    batches, and any batch on a busy machine, are counted inline. Two threads on two cores:
    tiktoken's default of 8 is slower than 1 here."""
    texts = texts if isinstance(texts, list) else list(texts)
    total = sum(map(len, texts))
    counts = [0] * len(texts)
    if not total:  # nothing to count (a batch of records counted already): the encoding is not loaded for it
        return counts
    get_encoding(encoding)  # load once, outside the threads

    def run(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            counts[i] = count_text(texts[i], encoding, approximate_over=approximate_over)

    if num_threads <= 1 or len(texts) < 2 or total < PARALLEL_MIN_CHARS or not _cores_idle(num_threads):
        run(0, len(texts))
        return counts
    bounds = [0]
    share, acc = total / num_threads, 0
    for i, t in enumerate(texts):
        acc += len(t)
        if acc >= share * len(bounds) and len(bounds) < num_threads:
            bounds.append(i + 1)
    bounds.append(len(texts))
    runs = [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi > lo]
    threads = [threading.Thread(target=run, args=r, daemon=True) for r in runs[1:]]
    for t in threads:
        t.start()
    run(*runs[0])
    for t in threads:
        t.join()
    return counts


# ---------------------------------------------------------------------------- media


def estimate_image_tokens(*, width: int | None = None, height: int | None = None, data_size: int = 0) -> int:
    """Tokens of one image, Anthropic's rule (see the constants above for the heuristic used when
    only the base64 length `data_size` is known, and when nothing is known)."""
    if width and height and width > 0 and height > 0:
        scale = min(1.0, IMAGE_MAX_EDGE / max(width, height), math.sqrt(IMAGE_MAX_PIXELS / (width * height)))
        pixels = (width * scale) * (height * scale)
    elif data_size and data_size > 0:
        pixels = (data_size * 3 / 4) / IMAGE_BYTES_PER_PIXEL
    else:
        return IMAGE_DEFAULT_TOKENS
    return max(1, min(IMAGE_MAX_TOKENS, math.ceil(pixels / IMAGE_PIXELS_PER_TOKEN)))


# ---------------------------------------------------------------------------- messages


def _tool_call_text(block: dict) -> str:
    """What a tool call costs: its name and its input as JSON (the text the importer kept, if any)."""
    args = block.get("text")
    if not args:
        tool_input = block.get("tool_input")
        if tool_input is None:
            args = ""
        elif isinstance(tool_input, str):
            args = tool_input
        else:
            try:
                args = json.dumps(tool_input, ensure_ascii=False)
            except (TypeError, ValueError):
                args = str(tool_input)
    name = block.get("tool_name") or ""
    return f"{name}\n{args}" if name and args else name or args


def _text_category(role: str, kind: str, raw_type: str | None, is_compact_summary: bool, record_type: str) -> str:
    if is_compact_summary:
        return "summary"
    if role == "system" or role not in ("user", "assistant", "tool"):
        if record_type in SYSTEM_PROMPT_RECORD_TYPES:
            return "system_prompt"
        if record_type in TOOL_DEFINITIONS_RECORD_TYPES:
            return "tool_definitions"
        return "other"
    if kind == "thinking" or raw_type == "redacted_thinking":
        return "thinking"
    if kind == "tool_call":
        return "tool_calls"
    if kind == "tool_result" or role == "tool":
        return "tool_results"
    if kind == "text":
        return "user" if role == "user" else "assistant"
    return "other"


def _plan(role: str, blocks: Sequence[dict], is_compact_summary: bool, record_type: str) -> list[tuple[str, str, int]]:
    """Per block: (category of its text, the text to count, media tokens)."""
    plan = []
    for block in blocks:
        kind = block.get("kind") or "other"
        if kind == "image":
            plan.append(("media", "", estimate_image_tokens(
                width=block.get("width"), height=block.get("height"), data_size=block.get("data_size") or 0)))
            continue
        category = _text_category(role, kind, block.get("raw_type"), is_compact_summary, record_type)
        text = _tool_call_text(block) if kind == "tool_call" else (block.get("text") or "")
        images = block.get("images") or 0
        sized = block.get("image_sizes") or []  # [width, height] of the images whose header was read
        media = sum(estimate_image_tokens(width=w, height=h) for w, h in sized[:images])
        media += max(0, images - len(sized)) * IMAGE_DEFAULT_TOKENS
        plan.append((category, text, media))
    return plan


def _assemble(plan: list[tuple[str, str, int]], text_counts: Iterable[int]) -> tuple[dict[str, int], list[int]]:
    categories: dict[str, int] = {}
    per_block: list[int] = []
    for (category, _text, media), n in zip(plan, text_counts):
        if n:
            categories[category] = categories.get(category, 0) + n
        if media:
            categories["media"] = categories.get("media", 0) + media
        per_block.append(n + media)
    ordered = {c: categories[c] for c in CATEGORIES if categories.get(c)}
    return ordered, per_block


MessageInput = tuple[str, Sequence[dict]] | tuple[str, Sequence[dict], bool] | tuple[str, Sequence[dict], bool, str]


def count_message_blocks(
    role: str,
    blocks: Sequence[dict],
    *,
    is_compact_summary: bool = False,
    record_type: str = "",
    encoding: str = DEFAULT_ENCODING,
) -> tuple[dict[str, int], list[int]]:
    """(tokens per category, tokens per block aligned with `blocks`) for one message.

    The category dict holds only non-zero categories, in CATEGORIES order; its values sum to the
    per-block values' sum (the message's token_total).
    """
    plan = _plan(role, blocks, is_compact_summary, record_type)
    return _assemble(plan, (count_text(text, encoding) for _c, text, _m in plan))


def count_message(
    role: str,
    blocks: Sequence[dict],
    *,
    is_compact_summary: bool = False,
    record_type: str = "",
    encoding: str = DEFAULT_ENCODING,
) -> dict[str, int]:
    """Tokens per category for one message (blocks as records.Block.as_dict() gives them):

    summary message (is_compact_summary) -> "summary"; user text -> "user"; assistant text ->
    "assistant"; thinking (and redacted thinking) -> "thinking"; tool_call -> "tool_calls" (name +
    input JSON); tool_result (and anything in a "tool" message) -> "tool_results"; image blocks and
    images inside tool results -> "media" (estimated, see estimate_image_tokens); system and other
    roles -> "other" (or "system_prompt"/"tool_definitions" for those record types). Use
    count_message_blocks for the per-block counts as well.
    """
    return count_message_blocks(
        role, blocks, is_compact_summary=is_compact_summary, record_type=record_type, encoding=encoding
    )[0]


def count_messages(
    messages: Iterable[tuple[Any, ...]],
    *,
    encoding: str = DEFAULT_ENCODING,
    num_threads: int = DEFAULT_THREADS,
    approximate_over: int | None = None,
) -> list[tuple[dict[str, int], list[int]]]:
    """count_message_blocks for a batch, counted in one count_texts call (the import path: faster
    than one call per message). Each item is (role, blocks[, is_compact_summary[, record_type]])."""
    plans = []
    texts: list[str] = []
    for item in messages:
        role, blocks = item[0], item[1]
        is_summary = bool(item[2]) if len(item) > 2 else False
        record_type = item[3] if len(item) > 3 else ""
        plan = _plan(role, blocks, is_summary, record_type or "")
        plans.append(plan)
        texts.extend(text for _c, text, _m in plan)
    counts = iter(count_texts(texts, encoding, num_threads=num_threads, approximate_over=approximate_over))
    return [_assemble(plan, [next(counts) for _ in plan]) for plan in plans]
