"""Site-wide flags for the navigation of base.html, decided here rather than in the template.

Lazy: a page that does not show the navigation (an htmx fragment) asks nothing."""

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from .permissions import projects_for


def nav(request: HttpRequest) -> dict:
    """`can_import`: some project of the user's allows importing (the Import link)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"can_import": False}
    return {"can_import": SimpleLazyObject(lambda: projects_for(request, "import").exists())}
