from django.contrib import admin

from .models import ApiToken, AuditEvent, Invitation, Membership, Project
from .throttle import ThrottledAdminAuthenticationForm

# The admin's sign-in is throttled like the login page's, and says so.
admin.site.login_form = ThrottledAdminAuthenticationForm


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    inlines = [MembershipInline]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["project", "user", "email", "role", "status", "created_at"]
    list_filter = ["status", "role"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    # The hash is never shown or edited here; a token is created on the tokens page.
    list_display = ["name", "prefix", "user", "project", "expires_at", "last_used_at", "revoked_at"]
    readonly_fields = ["user", "project", "name", "prefix", "created_at", "expires_at", "last_used_at"]
    exclude = ["token_hash"]

    def has_add_permission(self, request):
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "project_name", "actor_name", "action", "target"]
    list_filter = ["action"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
