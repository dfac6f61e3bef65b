from importlib.util import find_spec

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from contextviewer.accounts.throttle import ThrottledLoginView
from contextviewer.api import api

admin.autodiscover()  # SimpleAdminConfig (settings.py): the admin modules load with the URLs, not at start-up

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", api.urls),
    path("", include("contextviewer.conversations.job_urls")),
]
# Each app's pages (included when the app has a urls module).
for _name in (
    "contextviewer.conversations.curation_urls",
    "contextviewer.conversations.policylab_urls",
    "contextviewer.providers.urls",
    "contextviewer.accounts.urls",
    "contextviewer.review.urls",
):
    if find_spec(_name) is not None:
        urlpatterns.append(path("", include(_name)))
urlpatterns.append(path("", include("contextviewer.conversations.urls")))
