"""Running as root (issue 36, item 7): Celery's "You're running the worker with superuser
privileges" warning is left out where the worker accepts no serializer that runs code (JSON only,
as here), and kept where it accepts pickle."""

from __future__ import annotations

import os
import warnings
from types import SimpleNamespace

import pytest
from celery import signals
from celery.exceptions import SecurityError
from celery.platforms import check_privileges

from contextviewer.celery import ROOT_WARNING, app, root_is_safe


def _warnings_at_worker_start(monkeypatch, accept_content, *, init: bool = True) -> list[str]:
    """What a worker starting as root (uid 0) warns, as Celery's Worker does: the celeryd_init
    signal, then check_privileges."""
    for name in ("getuid", "geteuid"):
        monkeypatch.setattr(os, name, lambda: 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if init:
            signals.celeryd_init.send(sender="test@host", instance=None, conf=SimpleNamespace(accept_content=accept_content),
                                      options={})
        check_privileges(accept_content)
    return [str(w.message) for w in caught]


def test_the_worker_accepts_json_only():
    assert list(app.conf.accept_content) == ["json"]
    assert root_is_safe(app.conf.accept_content)


def test_a_json_worker_started_as_root_does_not_warn(monkeypatch):
    assert not [m for m in _warnings_at_worker_start(monkeypatch, ["json"]) if ROOT_WARNING in m]


def test_celery_would_warn_without_it(monkeypatch):
    # the same start without contextviewer's celeryd_init handler: Celery's warning
    assert any(ROOT_WARNING in m for m in _warnings_at_worker_start(monkeypatch, ["json"], init=False))


def test_a_worker_made_to_accept_pickle_is_not_quieted(monkeypatch):
    assert not root_is_safe(["json", "pickle"])
    monkeypatch.delenv("C_FORCE_ROOT", raising=False)
    with pytest.raises(SecurityError):  # Celery refuses it as root, as before
        _warnings_at_worker_start(monkeypatch, ["json", "pickle"])
