"""Worlds that many tests of a module share, built once (issue 32, item 5).

`rolled_back()`: a transaction that a module-scoped fixture builds its world in and that is rolled
back when the fixture ends, like tests/integration/accounts/test_access_matrix.py's: each test then
runs in a savepoint inside it (pytest-django's `db` fixture), so what a test writes is undone and
the next one sees the world as it was built. Not for tests that commit (`transactional_db`, a live
server, a real worker): the open transaction would hold what they need to see or to flush.

`alice(project)`: the user tests/integration/conftest.py's `user` fixture makes ("alice", password
"pw-alice-123", OWNER of the project), for a module's world (passwords are hashed with MD5 in the
tests: tests/conftest.py). `make_user` is tests.factories'.
"""

from __future__ import annotations

import contextlib

from django.db import transaction

from tests.factories import make_user  # noqa: F401 - re-exported for the modules that build worlds


@contextlib.contextmanager
def rolled_back(django_db_blocker):
    """Database access, in a transaction rolled back at the end (for a module-scoped fixture)."""
    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)


def alice(project):
    """tests/integration/conftest.py's `user`: alice, OWNER of `project`, password pw-alice-123."""
    return make_user("alice", "pw-alice-123", project)


def fresh(obj):
    """The row of a model instance read again (a test may change the shared instance it was built as)."""
    return type(obj)._default_manager.get(pk=obj.pk)
