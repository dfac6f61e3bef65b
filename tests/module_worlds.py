"""Worlds that many tests of a module share, built once (issue 32, item 5).

`rolled_back()`: a transaction that a module-scoped fixture builds its world in and that is rolled
back when the fixture ends, like tests/integration/accounts/test_access_matrix.py's: each test then
runs in a savepoint inside it (pytest-django's `db` fixture), so what a test writes is undone and
the next one sees the world as it was built. Not for tests that commit (`transactional_db`, a live
server, a real worker): the open transaction would hold what they need to see or to flush.

`alice(project)`: the user tests/integration/conftest.py's `user` fixture makes ("alice", password
"pw-alice-123", OWNER of the project), with the password hashed once per process instead of once
per test (PBKDF2 costs most of a second here): the same row, a valid hash of the same password, so
a login with it still works; only the salt is shared between the copies.
"""

from __future__ import annotations

import contextlib
from functools import lru_cache

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import transaction


@contextlib.contextmanager
def rolled_back(django_db_blocker):
    """Database access, in a transaction rolled back at the end (for a module-scoped fixture)."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)


@lru_cache(maxsize=None)
def hashed(password: str) -> str:
    return make_password(password)


def make_user(username: str = "alice", password: str | None = "pw-alice-123", project=None, role=None):
    """tests.factories.make_user (create_user, then a membership: OWNER unless `role` says), its
    password hashed once per process."""
    from contextviewer.accounts.models import Membership, Role

    User = get_user_model()
    user = User(username=User.normalize_username(username))
    if password is None:
        user.set_unusable_password()
    else:
        user.password = hashed(password)
    user.save()
    if project is not None:
        Membership.objects.create(user=user, project=project, role=role or Role.OWNER)
    return user


def alice(project):
    """tests/integration/conftest.py's `user`: alice, OWNER of `project`, password pw-alice-123."""
    return make_user("alice", "pw-alice-123", project)


def fresh(obj):
    """The row of a model instance read again (a test may change the shared instance it was built as)."""
    return type(obj)._default_manager.get(pk=obj.pk)
