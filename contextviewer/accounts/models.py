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


class Invitation(models.Model):
    """An invitation to join a project, by username (an existing account) or by email address.

    It waits until the invitee accepts or declines it (or a manager cancels it)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        ACCEPTED = "accepted"
        DECLINED = "declined"
        CANCELLED = "cancelled"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="invitations"
    )
    email = models.EmailField(blank=True)
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.MEMBER)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.invitee} → {self.project} ({self.role})"

    @property
    def invitee(self) -> str:
        return self.user.get_username() if self.user_id else self.email

    def is_for(self, user) -> bool:
        if self.user_id:
            return self.user_id == user.pk
        return bool(user.email) and user.email.lower() == self.email.lower()


class ApiTokenQuerySet(models.QuerySet):
    def usable(self):
        from django.utils import timezone

        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class TokenScope(models.TextChoices):
    FULL = "", "the API (with your role)"
    PUSH = "push", "push only"


class ApiToken(models.Model):
    """A bearer token for the JSON API, scoped to one user in one project.

    Only a SHA-256 hash of the secret is stored; the visible prefix finds the row. A "push only"
    token (scope) may only push session files (contextviewer/ingest/push_api.py): every other API
    operation refuses it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=20, unique=True)
    token_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    scope = models.CharField(max_length=10, choices=TokenScope.choices, default=TokenScope.FULL, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def status(self) -> str:
        from django.utils import timezone

        if self.revoked_at:
            return "revoked"
        if self.expires_at and self.expires_at <= timezone.now():
            return "expired"
        return "active"


class PushClient(models.Model):
    """A developer's machine running push.py for a project: its client id (generated once by the
    script and kept in its state file), its host name, and what it has sent. Shown on the project's
    members page, so a laptop that stopped pushing is seen."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="push_clients")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="push_clients")
    client_id = models.CharField(max_length=64)
    hostname = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_push_at = models.DateTimeField(null=True, blank=True)
    files_received = models.IntegerField(default=0)  # files held for it
    sessions_received = models.IntegerField(default=0)  # top-level conversations imported from them
    bytes_received = models.BigIntegerField(default=0)  # bytes stored for it (what was sent again once, not twice)

    class Meta:
        ordering = ["user__username", "hostname"]
        constraints = [models.UniqueConstraint(fields=["project", "client_id"], name="push_client_once")]

    def __str__(self) -> str:
        return f"{self.hostname or self.client_id} ({self.project})"


class AuditEvent(models.Model):
    """One security-relevant action. Kept when the actor or the project is deleted (names are copied)."""

    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events")
    project_name = models.CharField(max_length=200, blank=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=60)
    target = models.CharField(max_length=300, blank=True)
    details = models.JSONField(default=dict, blank=True)
    ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "created_at"])]

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action} {self.target}"
