"""OpenHands CLI (PyPI `openhands`, pinned in ops/drivers/pins.py) checked by itself: the real CLI
runs the standard plan against the scripted Chat Completions server (ops/drivers/openhands_cli.py):
one `openhands --headless` per prompt, then `--resume <id>`; its condenser (set to fold after 13
events in the user's agent_settings.json) folds at the start of prompt 3, which starts a sub-agent
through its `task` tool. The conversations folder it wrote is imported as a user would (`import
FOLDER`), and every figure is compared with the requests it sent (ops/conformance.py): the label,
main calls (not the condenser's), tool calls, the sub-agent under its parent, one fold with its
trigger, and the window at every main call.

The CLI runs once per module (about 100 s: each start waits on LiteLLM's price list and a skills
download that cannot reach the network)."""

from __future__ import annotations

from ops import conformance
from ops.drivers.openhands_cli import DRIVER  # noqa: F401 - the module's driver (tests/agents/conftest.py)


def test_openhands_cli_imports_exactly_what_it_sent(run, project):
    diffs = conformance.check(run, project)
    assert not diffs, "\n".join(map(str, diffs))
