"""Cards that other apps add to the conversation page (the Handoff and "Fold at X %" cards of
builds, the summaries of a fold's segment of review).

Review sits above the viewer and may not be imported by it, so each app declares its cards on its
AppConfig, by dotted path (as job kinds are declared), builds too (one way for every card):

    conversation_panels = ("contextviewer.builds.handoffs.handoff_card", ...)  # fn(request, conv, can_edit) -> Panel | None
    fold_panels = ("contextviewer.review.queues.summaries_card",)              # fn(request, fold) -> Panel | None

The view collects them (the functions query and decide); the template only renders each panel's
template with its prepared context (`{% panel p %}`, display/templatetags/cv.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from django.apps import apps
from django.utils.module_loading import import_string

from contextviewer.display.panels import Panel




@cache
def _declared(attribute: str) -> tuple[Callable, ...]:
    return tuple(import_string(path) for config in apps.get_app_configs() for path in getattr(config, attribute, ()))


def conversation_panels(request, conv, *, can_edit: bool) -> list[Panel]:
    """The cards every installed app adds under the curve, in INSTALLED_APPS order."""
    return [p for fn in _declared("conversation_panels") if (p := fn(request, conv, can_edit=can_edit)) is not None]


def fold_panels(request, folds) -> dict[int, list[Panel]]:
    """Fold id -> the cards shown under that fold's summary."""
    makers = _declared("fold_panels")
    return {f.pk: [p for fn in makers if (p := fn(request, f)) is not None] for f in folds if f is not None}
