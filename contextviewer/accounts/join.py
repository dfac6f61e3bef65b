"""An invitation link: the person invited by email address opens it, picks a username and a
password, and is signed in as a member with the invited role.

The link is the invitation's id signed with the secret key (django.core.signing): it cannot be
guessed or altered, it expires after JOIN_MAX_AGE, and it works once (the invitation is then
accepted). Nothing new is stored."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model, login, password_validation
from django.core import signing
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from contextviewer.refusals import refuse

from . import services
from .models import Invitation

SALT = "contextviewer.accounts.invitation-link"
JOIN_MAX_AGE = 14 * 24 * 3600  # seconds


def token_for(invitation: Invitation) -> str:
    return signing.dumps({"invitation": invitation.pk, "email": invitation.email.lower()}, salt=SALT)


def link_for(invitation: Invitation, request: HttpRequest | None = None) -> str:
    path = reverse("invitation_join", args=[token_for(invitation)])
    return request.build_absolute_uri(path) if request is not None else path


class JoinForm(forms.Form):
    username = forms.CharField(max_length=150)
    password1 = forms.CharField(label="Password", widget=forms.PasswordInput, strip=False)
    password2 = forms.CharField(label="Password again", widget=forms.PasswordInput, strip=False)

    def __init__(self, *args, email: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.email = email

    def clean_username(self) -> str:
        name = self.cleaned_data["username"].strip()
        User = get_user_model()
        try:
            User.username_validator(name)
        except forms.ValidationError:
            raise forms.ValidationError("Letters, digits and @ . + - _ only.") from None
        if User.objects.filter(username__iexact=name).exists():
            raise forms.ValidationError(f"The username {name!r} is taken: choose another.")
        return name

    def clean(self):
        data = super().clean()
        one, two = data.get("password1"), data.get("password2")
        if one and two and one != two:
            self.add_error("password2", "The two passwords differ.")
        elif one:
            user = get_user_model()(username=data.get("username") or "", email=self.email)
            try:
                password_validation.validate_password(one, user)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data


def _invitation(token: str) -> tuple[Invitation | None, str]:
    """The pending email invitation the token names, or why there is none."""
    try:
        data = signing.loads(token, salt=SALT, max_age=JOIN_MAX_AGE)
    except signing.SignatureExpired:
        return None, "This invitation link has expired: ask for a new invitation."
    except signing.BadSignature:
        return None, "This invitation link is not valid: check that it was copied whole."
    invitation = Invitation.objects.select_related("project").filter(pk=data.get("invitation")).first()
    if invitation is None or invitation.user_id or invitation.email.lower() != data.get("email"):
        return None, "This invitation no longer exists."
    if invitation.status != Invitation.Status.PENDING:
        return None, f"This invitation has been {invitation.status}: the link works once."
    return invitation, ""


@require_http_methods(["GET", "POST"])
def invitation_join(request: HttpRequest, token: str) -> HttpResponse:
    invitation, why_not = _invitation(token)
    if invitation is None:
        return refuse(request, why_not, status=410)
    User = get_user_model()
    if User.objects.filter(email__iexact=invitation.email).exists():
        return render(request, "accounts/join.html", {"invitation": invitation, "existing": True})
    if request.user.is_authenticated:
        return refuse(request, "You are signed in: sign out first to set up the invited account.", status=409)
    form = JoinForm(request.POST or None, email=invitation.email,
                    initial={"username": invitation.email.split("@")[0]})
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            user = User.objects.create_user(
                form.cleaned_data["username"], email=invitation.email, password=form.cleaned_data["password1"]
            )
            services.answer_invitation(invitation, user, accept=True, request=request)
        login(request, user, backend="contextviewer.accounts.throttle.ThrottledModelBackend")
        from django.contrib import messages

        messages.info(request, f"Welcome: you joined {invitation.project.name} as {invitation.role}.")
        return redirect(f"{reverse('index')}?project={invitation.project.slug}")
    return render(request, "accounts/join.html", {"invitation": invitation, "form": form},
                  status=400 if request.method == "POST" else 200)
