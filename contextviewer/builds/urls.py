from django.urls import path

from contextviewer.builds import views as curation_views

urlpatterns = [
    path("c/<int:pk>/build/", curation_views.build_page, name="build_page"),
    path("c/<int:pk>/build/options/", curation_views.build_options, name="build_options"),
    path("c/<int:pk>/build/preview/", curation_views.build_preview, name="build_preview"),
    path("c/<int:pk>/build/create/", curation_views.build_create, name="build_create"),
    path("c/<int:pk>/export/<str:fmt>/", curation_views.export_download, name="export_download"),
    path("c/<int:pk>/handoff/", curation_views.handoff_start, name="handoff_start"),
    path("c/<int:pk>/handoff/<int:job_id>/", curation_views.handoff_status, name="handoff_status"),
    path("c/<int:pk>/fold-preview/", curation_views.fold_preview, name="fold_preview"),
]
