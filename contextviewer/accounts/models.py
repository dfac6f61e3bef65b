from django.conf import settings
from django.db import models


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"
    ANNOTATOR = "annotator"
    VIEWER = "viewer"


# What each role may do; views and API operations ask through Membership.can().
ROLE_PERMISSIONS: dict[str, set[str]] = {
    Role.OWNER: {"view", "import", "edit", "score", "settings", "delete", "manage_members"},
    Role.ADMIN: {"view", "import", "edit", "score", "settings", "delete", "manage_members"},
    Role.MEMBER: {"view", "import", "edit", "score"},
    Role.ANNOTATOR: {"view", "score"},
    Role.VIEWER: {"view"},
}

DEFAULT_PROJECT_SLUG = "default"


class ProjectQuerySet(models.QuerySet):
    def for_user(self, user):
        if not user.is_authenticated:
            return self.none()
        return self.filter(memberships__user=user).distinct()


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="unique_membership")]

    def can(self, permission: str) -> bool:
        return permission in ROLE_PERMISSIONS.get(self.role, set())
