"""python manage.py policies CONVERSATION [--policy NAME ...] [--json]

Replays the seed harnesses' context policies over one recorded conversation (its id or its
session's external id) and prints, per policy: fires, fire points (call index, tokens), tokens
saved, peak, calls in the red zone and facts at risk. Open loop: the recorded actions are
replayed unchanged; after the first fold the real agent would have behaved differently."""

import json

from contextviewer.lab import replays as policylab
from contextviewer.conversations.management.base import ConversationCommand


class Command(ConversationCommand):
    command_name = "policies"
    help = "Replay context policies over a recorded conversation (open loop) and print what each would have done."

    def add_arguments(self, parser):
        parser.add_argument("conversation", help="conversation id or session (external) id")
        parser.add_argument(
            "--policy", action="append", default=[], metavar="NAME", help="a policy to replay (repeatable; default: all)"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        conv = self.only_conversation(opts["conversation"], verb="replay")
        try:
            names = policylab.resolve_names(opts["policy"])
        except policylab.UnknownPolicy as exc:
            self.fail(str(exc))
        lab = policylab.load_session(conv)
        results = policylab.replay_all(conv, names, lab)
        if opts["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "conversation": conv.pk,
                        "external_id": conv.external_id,
                        "agent": conv.agent,
                        "calls": len(lab.session.calls),
                        "window": lab.session.window,
                        "open_loop": True,
                        "calibrated": lab.session.calibrated,
                        "calibration_note": lab.session.calibration_note,
                        "note": policylab.OPEN_LOOP_NOTE,
                        "clipped_tokens": lab.clipped_tokens,
                        "recorded_cost_usd": policylab.recorded_cost(lab),
                        "policies": [r.as_dict() for r in results],
                    },
                    ensure_ascii=False,
                )
            )
            return
        self.stdout.write(
            f"conversation {conv.pk} ({conv.title or conv.external_id}), {conv.agent}: "
            f"{len(lab.session.calls)} model calls, window {lab.session.window:,} tokens"
        )
        self.stdout.write(policylab.OPEN_LOOP_NOTE)
        if not lab.session.calibrated:
            self.stdout.write(f"NOT CALIBRATED: {lab.session.calibration_note}. Tokens saved and costs are not comparable.")
        for r in results:
            points = ", ".join(f"call {c} at {t:,}" for c, t in r.fire_points[:10])
            if len(r.fire_points) > 10:
                points += f", and {len(r.fire_points) - 10} more (--json lists all)"
            cost = f", ${r.cost:,.2f} at list price (modelled)" if r.cost is not None else ""
            saved = f"{r.saved_tokens:,} tokens saved" if r.calibrated else "tokens saved not comparable (uncalibrated)"
            over = f", {r.overflow_calls} call{'s' if r.overflow_calls != 1 else ''} over the window" if r.overflow_calls else ""
            self.stdout.write(
                f"\n{r.name} ({r.label}): {r.fires} action{'s' if r.fires != 1 else ''} ({r.actions_text}), "
                f"{saved}, peak {r.peak:,}{over}, {r.red_zone_calls} call"
                f"{'s' if r.red_zone_calls != 1 else ''} in the red zone, {r.facts_at_risk} fact"
                f"{'s' if r.facts_at_risk != 1 else ''} at risk{cost}"
            )
            if points:
                self.stdout.write(f"  fire points: {points}")
            if r.rule_note:
                self.stdout.write(f"  rule: {r.rule_note}")
            for note in r.limit_notes:
                self.stdout.write(f"  WARNING: {note}")
