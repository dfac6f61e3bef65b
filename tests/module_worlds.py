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

import pytest
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


def conftest_world():
    """tests/integration/conftest.py's project and user."""
    from contextviewer.accounts.services import get_or_create_project

    project = get_or_create_project("Test project")
    return project, alice(project)


def project_and_user(build=conftest_world):
    """The fixtures `_module_world, project, user` of a module whose tests share one project and
    user: `build()` (project, user) runs once, in a transaction rolled back at the module's end, and
    each test reads both again in its savepoint. A module takes them by assigning the three names:
    `_module_world, project, user = project_and_user()`."""

    @pytest.fixture(scope="module")
    def _module_world(django_db_setup, django_db_blocker):
        with rolled_back(django_db_blocker):
            yield build()

    @pytest.fixture
    def project(_module_world, db):
        return fresh(_module_world[0])

    @pytest.fixture
    def user(_module_world, db):
        return fresh(_module_world[1])

    return _module_world, project, user
