"""mini-swe-agent: the light entry of ``importers/mini_swe_agent/parser.py`` (its name, label, where its logs are, the
file endings it reads, and its sniff); see ``importers/formats.py``."""

from __future__ import annotations

import re
from pathlib import Path

from contextviewer.importers.common import head_text
from contextviewer.importers.formats import DOCUMENT, Entry
from contextviewer.importers.jsondoc import head_value_cut
from contextviewer.importers.mini_swe_agent.tools import TOOLS


NAME = "mini-swe-agent"


_FORMAT_KEY = re.compile(r'"trajectory_format"\s*:\s*"mini-swe-agent')
_MINI_MARK = re.compile(r'"mini_version"\s*:|"(?:agent|model|environment)_type"\s*:\s*"minisweagent\.')
_MESSAGES = re.compile(r'"messages"\s*:\s*\[')
_INFO = re.compile(r'"info"\s*:\s*\{')
# (or an exit status, or a submission, longer than the head: the head ends inside it)
_INFO_FIRST = re.compile(r'\{\s*"info"\s*:\s*\{\s*"exit_status"\s*:\s*(?:(?:null|"(?:[^"\\]|\\.)*")\s*,\s*"submission"\s*:|"(?:[^"\\]|\\.)*$)')


def sniff(path: Path, head: bytes) -> float:
    """A JSON object with mini-swe-agent's marks: its ``trajectory_format``, or an ``info`` with
    ``mini_version`` / a ``minisweagent.`` class, or (the head may end inside a long submission,
    before those) an ``info`` opening with ``exit_status`` and ``submission`` as save() writes it;
    a ``*.traj.json`` with ``info`` and ``messages`` is likely one."""
    if path.is_dir() or not head:
        return 0.0
    text = head_text(head)
    if not text.startswith("{"):
        return 0.0
    if _FORMAT_KEY.search(text):
        return 0.95
    if _MINI_MARK.search(text):  # info comes first: a long submission may push messages out of the head
        return 0.9
    named = path.name.lower().endswith((".traj.json", ".traj.json.gz"))
    if _INFO_FIRST.match(text):  # save()'s own order: info{exit_status, submission, …} first
        return 0.8 if named else 0.6
    if named and _INFO.search(text) and _MESSAGES.search(text):
        return 0.7
    if named:  # a long value of its info (a system template) runs past the head: its first keys
        value, _more, cut = head_value_cut(head)
        info = value.get("info") if value.__class__ is dict and list(value)[:1] == ["info"] else None
        if cut and info.__class__ is dict and ("config" in info or "model_stats" in info):
            return 0.6
    return 0.0


ENTRY = Entry(
    tools=TOOLS,
    module="contextviewer.importers.mini_swe_agent.parser",
    name=NAME,
    label="mini-swe-agent",
    storage=DOCUMENT,
    sniff=sniff,
    extensions=(".traj.json", ".traj.json.gz"),
    where="*.traj.json: `mini` writes ~/.config/mini-swe-agent/last_mini_run.traj.json (or -o PATH); "
          "`mini-extra swebench` writes <output>/<instance_id>/<instance_id>.traj.json",
    locations=(),
)
