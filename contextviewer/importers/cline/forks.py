"""The VS Code forks of Cline that keep Cline's task folders (light: what their entries need). Roo Code
(extension ``RooVeterinaryInc.roo-cline``) and Kilo Code (``kilocode.kilo-code``, a fork of Roo Code)
write each task as Cline does, in ``<VS Code user folder>/globalStorage/<extension id>/tasks/<task id>/``
(their ``getTaskDirectoryPath``: ``<storage>/tasks/<id>``; ``GlobalFileNames``: api_conversation_history.json,
ui_messages.json, task_metadata.json). The files alone do not say which extension wrote them, so a task
folder is the fork's where it lies under the fork's folder, and Cline's (``Cline / Roo Code``) elsewhere."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from contextviewer.importers.cline.entry import sniff as task_sniff

# VS Code's user folder on Linux and on macOS (its globalStorage is there); a customStoragePath the
# user set is not known here.
VSCODE_USER = ("~/.config/Code/User", "~/Library/Application Support/Code/User")


def under(path: Path, extension_id: str) -> bool:
    """Whether ``path`` lies in ``<extension_id>/tasks/`` (globalStorage lowers the id; matched
    without case)."""
    parts = [p.lower() for p in Path(path).absolute().parts]
    return any(p == extension_id and parts[i + 1:i + 2] == ["tasks"] for i, p in enumerate(parts))


def sniffer(extension_id: str) -> Callable[[Path, bytes], float]:
    """A task folder (or one of its files) that Cline's sniff claims, lying under the fork's folder:
    claimed above Cline's claim."""

    def sniff(path: Path, head: bytes) -> float:
        return 0.95 if under(path, extension_id) and task_sniff(path, head) > 0 else 0.0

    return sniff


def locations(extension_id: str) -> tuple[str, ...]:
    return tuple(f"{user}/globalStorage/{extension_id}/tasks" for user in VSCODE_USER)
