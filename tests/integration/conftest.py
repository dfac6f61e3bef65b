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


@pytest.fixture(scope="module")
def module_worker(request, django_db_setup, django_db_blocker):
    # A test module may set WORKER_ENV (e.g. lower limits) for its worker.
    with django_db_blocker.unblock():
        purge_broker()
        w = Worker(env=getattr(request.module, "WORKER_ENV", None))
    yield w
    w.stop()


@pytest.fixture
def worker(module_worker, transactional_db):
    """A real Celery worker process on the test database (tests using it commit their data)."""
    return module_worker
