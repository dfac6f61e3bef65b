from django.contrib.auth import views as auth_views
from django.urls import path

from . import join, passwords, views

urlpatterns = [
    # One's own password: change it signed in, or reset it by email (passwords.py).
    path("password/change/", passwords.ThrottledPasswordChangeView.as_view(), name="password_change"),
    path("password/change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("password/reset/", passwords.ThrottledPasswordResetView.as_view(), name="password_reset"),
    path("password/reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path(
        "password/reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path("password/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("projects/", views.projects, name="projects"),
    path("join/<str:token>/", join.invitation_join, name="invitation_join"),
    path("invitations/<int:invitation_id>/<slug:answer>/", views.invitation_answer, name="invitation_answer"),
    path("projects/<slug:project>/members/", views.members, name="project_members"),
    path("projects/<slug:project>/members/invite/", views.member_invite, name="member_invite"),
    path("projects/<slug:project>/members/<int:membership_id>/role/", views.member_role, name="member_role"),
    path("projects/<slug:project>/members/<int:membership_id>/remove/", views.member_remove, name="member_remove"),
    path(
        "projects/<slug:project>/invitations/<int:invitation_id>/cancel/",
        views.invitation_cancel, name="invitation_cancel",
    ),
    path("projects/<slug:project>/tokens/", views.tokens, name="project_tokens"),
    path("projects/<slug:project>/tokens/<int:token_id>/revoke/", views.token_revoke, name="token_revoke"),
    path("projects/<slug:project>/audit/", views.audit_log, name="project_audit"),
]
