from django.urls import path

from contextviewer.review import views

urlpatterns = [
    path("review/", views.review_home, name="review_home"),
    path("projects/<slug:project>/review/", views.review_index, name="review_index"),
    path("projects/<slug:project>/review/queues/new/", views.queue_create, name="review_queue_create"),
    path("projects/<slug:project>/review/settings/", views.score_settings, name="review_settings"),
    path("projects/<slug:project>/review/dashboard/", views.dashboard, name="review_dashboard"),
    path("review/queues/<int:queue_id>/", views.queue_detail, name="review_queue"),
    path("review/queues/<int:queue_id>/next/", views.queue_next, name="review_queue_next"),
    path("review/items/<int:item_id>/", views.review_item, name="review_item"),
    path("review/folds/<int:fold_id>/", views.fold_review, name="review_fold"),
    path("review/folds/<int:fold_id>/comments/", views.comment_add, name="review_comment"),
    path("review/folds/<int:fold_id>/judge/", views.judge_start, name="review_judge"),
    path("review/folds/<int:fold_id>/again/", views.summarize_again, name="review_summarize_again"),
    path("review/folds/<int:fold_id>/pairwise/<int:other_id>/", views.pairwise, name="review_pairwise"),
]
