"""A card an app adds to the conversation page: the template it renders and the context it prepared
(the viewer collects them: viewer/panels.py; the `panel` tag of `cv` renders one)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Panel:
    template: str
    context: dict = field(default_factory=dict)
