from django.urls import path

from contextviewer.viewer import delete_views, live, reading_views, views, window_views

urlpatterns = [
    path("", views.index, name="index"),
    path("c/<int:pk>/", views.conversation, name="conversation"),
    path("c/<int:pk>/segments/<int:index>/", views.segment_turns, name="segment_turns"),
    path("c/<int:pk>/segments/<int:index>/body/", views.segment_body, name="segment_body"),
    path("c/<int:pk>/folds/", views.fold_list, name="fold_list"),
    path("c/<int:pk>/folds/<int:fold_id>/summary/", reading_views.fold_summary, name="fold_summary"),
    path("c/<int:pk>/subagent-turns/", reading_views.subagent_turns, name="subagent_turns"),
    path("c/<int:pk>/live/", live.conversation_live, name="conversation_live"),
    path("c/<int:pk>/delete/", delete_views.conversation_delete, name="conversation_delete"),
    path("c/<int:pk>/calls/<str:call>/window/", window_views.call_window, name="call_window"),
    path("c/<int:pk>/turns/<int:turn>/", views.turn, name="turn"),
    path("c/<int:pk>/messages/<int:message_id>/blocks/<int:index>/", views.block, name="block"),
    path("c/<int:pk>/messages/<int:message_id>/images/<int:index>/", views.image, name="image"),
]
