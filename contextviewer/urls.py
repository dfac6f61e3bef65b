from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from contextviewer.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", api.urls),
    path("", include("contextviewer.conversations.job_urls")),
    path("", include("contextviewer.conversations.urls")),
]
