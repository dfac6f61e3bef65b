"""A build job's page says what was selected in words, with links: each fold to its page, each
turn to the source conversation's turn; never a Python dict (issue 36, item 3)."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.test import Client

from contextviewer.builds import services as builds
from contextviewer.conversations.models import Conversation
from contextviewer.core import build as core_build
from contextviewer.jobs import queue as jobs
from contextviewer.jobs.models import JobStatus
from tests.factories import build_conversation

pytestmark = pytest.mark.django_db


def _built(project, user, turns, folds, after_fold=None):
    source = build_conversation(project, turns=14, fold_at=40_000, subagent_turn=None).conversation
    job = builds.start_build(source, turns(source), folds, after_fold=after_fold, user=user, enqueue=False)
    done = jobs.run(job.pk)
    assert done.status == JobStatus.SUCCEEDED, done.error
    client = Client()
    client.force_login(user)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    figures = re.search(r'<dl class="job-figures">(.*?)</dl>', page, re.S).group(1)
    return source, figures


def _text(html: str) -> str:
    """The words as a reader sees them (each figure's label and value apart)."""
    html = re.sub(r"</?d[td]>", " ", html)
    return " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())


def _turns_after_fold_1(source, count):
    """The first turns that fold 1's summary does not stand for (the synthetic conversation folds
    every few turns: these are turns 5 and 6)."""
    spans, infos = builds.turn_spans(source), builds.fold_infos(source)
    behind = set(core_build.exclusions(spans, infos)[1])
    return [t.turn for t in spans if t.turn not in behind][:count]


def test_a_summary_and_turns_are_said_in_words_with_links(project, user):
    picked = {}

    def turns(source):
        picked["turns"] = _turns_after_fold_1(source, 2)
        return picked["turns"]

    source, figures = _built(project, user, turns, [1])
    a, b = picked["turns"]
    assert "{" not in figures and "'turns'" not in figures
    assert "<dt>Selection</dt>" in figures
    assert f"The summary of fold 1 and turns {a}–{b}." in _text(figures)
    fold = builds.build_folds(source)[0]
    assert f'href="/review/folds/{fold.pk}/"' in figures
    for t in (a, b):
        assert f'href="/c/{source.pk}/?turn={t}#turn-{t}"' in figures


def test_turns_alone_and_the_summary_plus_what_followed_it(project, user):
    source, figures = _built(project, user, lambda s: _turns_after_fold_1(s, 1), [])
    (t,) = _turns_after_fold_1(source, 1)
    assert f"Turn {t}." in _text(figures)

    source, figures = _built(project, user, lambda s: [], [], after_fold=1)
    words = _text(figures)
    assert "Selection Fold 1’s summary plus what followed it: " in words, words
    assert re.search(r"turns \d+–\d+\.$", words) or re.search(r"turn \d+\.$", words), words


def test_the_words_stay_once_the_source_is_gone(project, user):
    source, _ = _built(project, user, lambda s: _turns_after_fold_1(s, 2), [1])
    built = Conversation.objects.get(lineage__source__id=source.pk)
    job_id = built.lineage["job"]
    source.delete()
    client = Client()
    client.force_login(user)
    page = client.get(f"/jobs/{job_id}/").content.decode()
    figures = re.search(r'<dl class="job-figures">(.*?)</dl>', page, re.S).group(1)
    assert "The summary of fold 1 and turns" in _text(figures)
    assert "/review/folds/" not in figures and "?turn=" not in figures
