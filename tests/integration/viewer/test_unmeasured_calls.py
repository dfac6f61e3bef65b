"""A model call whose log records no usage (SWE-agent steps, usage 0) is shown as an estimate,
never as "0 tokens, measured"."""

import json

import pytest
from django.urls import reverse

from contextviewer.ingest import files as ingest
from contextviewer.conversations.models import Conversation


def _trajectory(path):
    history = [
        {"role": "system", "content": "You are a helpful assistant that can fix bugs.", "agent": "main"},
        {"role": "user", "content": "Fix the failing test in tests/test_io.py", "agent": "main"},
    ]
    steps = []
    for i in range(3):
        action = f"cat src/module_{i}.py"
        history.append({"role": "assistant", "content": f"Let me look at module {i}.\n\n```\n{action}\n```",
                        "thought": f"Let me look at module {i}.", "action": action, "agent": "main"})
        history.append({"role": "user", "content": f"def f_{i}(): return {i}\n" * 20, "agent": "main"})
        steps.append({"action": action, "observation": f"def f_{i}(): return {i}\n" * 20, "response": f"Let me look at module {i}.",
                      "thought": f"Let me look at module {i}.", "state": "{}", "query": [], "execution_time": 0.1})
    path.write_text(json.dumps({"trajectory": steps, "history": history,
                                "info": {"model_stats": {"tokens_sent": 5000, "tokens_received": 300, "api_calls": 3}}}))
    return path


@pytest.mark.django_db
def test_unmeasured_calls_give_an_estimated_gauge(tmp_path, project, user, client):
    ingest.import_path(project, _trajectory(tmp_path / "run.traj"))
    conv = Conversation.objects.get()
    assert conv.agent == "swe-agent" and conv.model_call_count == 3
    assert all(c.context_size == 0 for c in conv.model_calls.all())
    client.force_login(user)
    page = client.get(reverse("conversation", args=[conv.pk])).content.decode()
    figures = page.split('class="gauge-figures"', 1)[1].split("</p>", 1)[0]
    assert "estimated" in figures and "measured" not in figures
