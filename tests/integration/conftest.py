import pytest

from tests.worker import Worker, purge_broker


@pytest.fixture
def project(db):
    from contextviewer.accounts.services import get_or_create_project

    return get_or_create_project("Test project")


@pytest.fixture
def user(db, project):
    from django.contrib.auth import get_user_model

    from contextviewer.accounts.models import Membership, Role

    user = get_user_model().objects.create_user("alice", password="pw-alice-123")
    Membership.objects.create(project=project, user=user, role=Role.OWNER)
    return user


@pytest.fixture
def worker(transactional_db):
    """A real Celery worker process on the test database (tests using it commit their data)."""
    purge_broker()
    w = Worker()
    yield w
    w.stop()
