from django.urls import path

from contextviewer.lab import views as policylab_views

urlpatterns = [
    path("c/<int:pk>/lab/", policylab_views.lab, name="policy_lab"),
    path("policies/", policylab_views.project_table, name="policy_table"),
    path("policies/update/", policylab_views.project_table_start, name="policy_table_start"),
]
