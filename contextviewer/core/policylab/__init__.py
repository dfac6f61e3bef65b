"""Policy lab: the seed harnesses' context policies replayed open-loop over a recorded session.

Spec: ../shared/docs/policy-lab.md. Pure Python; no Django."""

from .model import Call, CallWindow, Event, Item, Msg, Policy, Replay, Session
from .registry import POLICIES, defaults, get, names

__all__ = ["Call", "CallWindow", "Event", "Item", "Msg", "Policy", "Replay", "Session", "POLICIES", "defaults", "get", "names"]
