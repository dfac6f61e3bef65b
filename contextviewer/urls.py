from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from contextviewer.accounts.throttle import ThrottledLoginView
from contextviewer.api import api

handler403 = "contextviewer.refusals.permission_denied"  # a PermissionDenied looks like refuse()
handler500 = "contextviewer.middleware.server_error"  # the database out of reach: 503, Retry-After

admin.autodiscover()  # SimpleAdminConfig (settings.py): the admin modules load with the URLs, not at start-up

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", api.urls),
    # Each app's pages; conversations last (its index is the site's root).
    path("", include("contextviewer.ingest.urls")),
    path("", include("contextviewer.jobs.urls")),
    path("", include("contextviewer.builds.urls")),
    path("", include("contextviewer.lab.urls")),
    path("", include("contextviewer.providers.urls")),
    path("", include("contextviewer.accounts.urls")),
    path("", include("contextviewer.review.urls")),
    path("", include("contextviewer.usage.urls")),
    path("", include("contextviewer.viewer.urls")),
]
