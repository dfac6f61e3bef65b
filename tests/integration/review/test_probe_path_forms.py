"""The fold page, the probes API and `manage.py probes` read the same probe (issue 34, item 4): on a
Windows session whose summary names files in other spellings, one file through a glob, and a plan
the user rejected. Built row by row as tests/integration/review/test_probe_continuation.py does:

    0  user       "Compare the captures and fix the cart."
    1-8           Read of four screenshots (C:\\Users\\Ana\\shop\\shots\\Screenshot_2026-01-0N-18N1.png)
    9-10          Read C:\\Users\\Ana\\shop\\src\\Cart.ts
    11-12         Read C:\\Users\\Ana\\shop\\docs\\Deep Dive.md (a path with spaces)
    13-14         Read C:\\Users\\Ana\\shop\\src\\legacy.ts (lost)
    15-16         ExitPlanMode, rejected by the user
    17-18         Read C:\\Users\\Ana\\shop\\src\\missing.ts: File does not exist.
    19 system     compact_boundary                  <- the fold
    20 user       the summary: `src/cart.ts` (another case, slashes), "docs/Deep Dive.md", shots/Screenshot_*-18*.png
    21-22         Edit ~/shop/src/legacy.ts (the lost file again, in its `~` form)
"""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from contextviewer.conversations.models import Fold
from contextviewer.review import probes
from tests.integration.review.test_probe_continuation import Rows

pytestmark = pytest.mark.django_db

WIN = "C:\\Users\\Ana\\shop"
SHOTS = [f"{WIN}\\shots\\Screenshot_2026-01-0{i}-18{i}1.png" for i in range(1, 5)]
SUMMARY = ("Goal: fix the totals in `src/cart.ts` (see \"docs/Deep Dive.md\"). The four shots/Screenshot_*-18*.png "
           "captures show the bug. The user rejected the plan. Next: fix the rounding.")


def windows_fold(project):
    rows = Rows(project, "windows-paths")
    rows.conv.cwd = WIN
    rows.text("user", 0, "Compare the captures and fix the cart.")
    for shot in SHOTS:
        rows.tool(0, "Read", {"file_path": shot}, "[image]")
    rows.tool(0, "Read", {"file_path": f"{WIN}\\src\\Cart.ts"}, "export const total = 1;")
    rows.tool(0, "Read", {"file_path": f"{WIN}\\docs\\Deep Dive.md"}, "# Deep dive")
    rows.tool(0, "Read", {"file_path": f"{WIN}\\src\\legacy.ts"}, "export {};")
    plan = rows.tool(0, "ExitPlanMode", {"plan": "1. rewrite the cart"}, "")
    rejected = plan.position + 1
    rows.messages[rejected].blocks = [{"kind": "tool_result", "tool_id": "toolu_0008", "is_error": True,
                                       "text": "The user doesn't want to proceed with this tool use. The tool use was rejected."}]
    rows.messages[rejected].save()
    missing = rows.tool(0, "Read", {"file_path": f"{WIN}\\src\\missing.ts"}, "")
    rows.messages[missing.position + 1].blocks = [{"kind": "tool_result", "tool_id": "toolu_0009", "is_error": True,
                                                   "text": "<tool_use_error>File does not exist.</tool_use_error>"}]
    rows.messages[missing.position + 1].save()
    boundary = rows.boundary(0)
    summary = rows.text("user", 1, SUMMARY, is_compact_summary=True)
    rows.tool(1, "Edit", {"file_path": "~/shop/src/legacy.ts", "old_string": "a", "new_string": "b"}, "The file has been updated.")
    fold = Fold.objects.create(conversation=rows.conv, key="boundary-win", position=boundary.position, boundary=boundary,
                               summary_message=summary, summary_text=SUMMARY, trigger="manual")
    return rows.done(), fold


def test_the_page_the_api_and_the_command_agree_on_path_forms_patterns_and_a_rejection(project, user, client):
    conv, fold = windows_fold(project)
    probe = probes.probe_for(fold)
    paths = {f["text"]: f for f in probe.facts if f["kind"] == "path"}
    assert [paths[s]["how"] for s in SHOTS] == ["pattern"] * 4
    assert paths[f"{WIN}\\src\\Cart.ts"]["kept"] and paths[f"{WIN}\\docs\\Deep Dive.md"]["kept"]
    legacy = paths[f"{WIN}\\src\\legacy.ts"]
    assert not legacy["kept"] and legacy["used_after"] is True  # named again in its ~ form inside the Edit
    assert [f["text"] for f in probe.facts if f["kind"] == "rejection"] == ["The user rejected the plan"]
    errors = [f["text"] for f in probe.facts if f["kind"] == "error"]
    assert errors == [f"File does not exist. ({WIN}\\src\\missing.ts)"]

    out = StringIO()
    call_command("probes", str(conv.pk), "--json", stdout=out)
    (row,) = json.loads(out.getvalue())["folds"]
    assert [f["text"] for f in row["named_by_pattern"]] == SHOTS
    lost_paths = [f["text"] for f in row["lost"] if f["kind"] == "path"]
    assert lost_paths == [f"{WIN}\\src\\legacy.ts", f"{WIN}\\src\\missing.ts"]
    text = StringIO()
    call_command("probes", str(conv.pk), stdout=text)
    assert text.getvalue().count("named by a pattern:") == 4

    client.force_login(user)
    api = client.get(f"/api/review/folds/{fold.pk}/probe").json()
    assert api["lost"] == row["lost"] and api["named_by_pattern"] == row["named_by_pattern"]
    (report,) = client.get(f"/api/review/conversations/{conv.pk}/probes").json()
    assert report["lost"] == row["lost"] and report["named_by_pattern"] == row["named_by_pattern"]

    page = client.get(f"/review/folds/{fold.pk}/").content.decode()
    assert page.count("kept, named by a pattern") == 4
    assert "The user rejected the plan" in page and "File does not exist." in page
