"""Projects and memberships: the writes shared by the run command, views and tests."""

from django.contrib.auth import get_user_model
from django.db import transaction

from .models import DEFAULT_PROJECT_SLUG, Membership, Project, Role  # noqa: F401


def get_or_create_project(name: str, owner=None) -> Project:
    from django.utils.text import slugify

    slug = slugify(name)[:100] or DEFAULT_PROJECT_SLUG
    with transaction.atomic():
        project, _ = Project.objects.get_or_create(slug=slug, defaults={"name": name})
        if owner is not None:
            Membership.objects.get_or_create(project=project, user=owner, defaults={"role": Role.OWNER})
    return project


def default_project(owner=None) -> Project:
    return get_or_create_project("Default", owner=owner)


def ensure_admin(username: str = "admin") -> tuple[object, str | None]:
    """Create the first admin account once; return (user, password) with the password only when new."""
    import secrets

    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is not None:
        return user, None
    password = secrets.token_urlsafe(12)
    user = User.objects.create_superuser(username=username, email="", password=password)
    get_or_create_project("Default", owner=user)
    return user, password


def membership(user, project) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, project=project).first()
