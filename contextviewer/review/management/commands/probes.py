"""python manage.py probes CONVERSATION [--json] [--project SLUG]

Per fold of the conversation (by id or external id): retention per fact kind and overall, the
compression ratio, the summary's tokens, the lost facts with the turn they came from (marked when
the conversation used them again after the fold), and what followed the fold: the paths read again,
the tool calls before the first edit, how many of the first actions touch what the summary names.
--json adds the background (tier C facts: paths only seen in tool output, vendored, lookups)."""

import json

from django.core.management.base import BaseCommand, CommandError

from contextviewer.conversations.models import Conversation
from contextviewer.core.facts import KINDS
from contextviewer.review import probes


def _pct(value) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


class Command(BaseCommand):
    # Data commands skip Django's system checks: they load the URL configuration and the API's
    # schemas (0.3 s of every run). The server and `manage.py check` run them.
    requires_system_checks = []
    help = "Fact probes of a conversation's folds: what each summary kept and lost."

    def add_arguments(self, parser):
        parser.add_argument("conversation", help="conversation id or external (session) id")
        parser.add_argument("--project", help="project slug, when the external id is in several projects")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        ref = opts["conversation"].strip()
        qs = Conversation.objects.all()
        if opts.get("project"):
            qs = qs.filter(project__slug=opts["project"])
        matches = list(qs.by_reference(ref)[:2])
        if not matches:
            raise CommandError(f"No conversation with id or external id {ref!r}.")
        if len(matches) > 1:
            raise CommandError(f"{ref!r} names conversations in several projects: add --project SLUG.")
        conv = matches[0]
        rows = probes.probe_report(conv)
        if opts["json"]:
            self.stdout.write(json.dumps({"conversation": conv.pk, "external_id": conv.external_id, "folds": rows}, indent=2))
            return
        if not rows:
            self.stdout.write(f"{conv.external_id}: no folds.")
            return
        for row in rows:
            ratio = "—" if row["compression_ratio"] is None else f"{row['compression_ratio']:.1f}x"
            size = "encrypted (size unknown)" if row["summary_encrypted"] else f"{row['summary_tokens']} tokens"
            self.stdout.write(
                f"fold {row['fold_id']} at position {row['position']} ({row['origin']}): retention {_pct(row['retention'])} "
                f"of {row['facts']} facts, compression {ratio}, summary {size}"
            )
            for kind in KINDS:
                k = row["per_kind"].get(kind) or {}
                if k.get("total"):
                    self.stdout.write(f"  {kind:<11} {k['kept']:>4}/{k['total']:<4} {_pct(k['retention'])}")
            if row["anticipated"] is not None or row["calls_before_first_edit"] is not None or row["reread_after"]:
                first_edit = row["calls_before_first_edit"]
                anticipated = row["anticipated"]
                self.stdout.write(
                    "  after the fold: "
                    + ("no edit" if first_edit is None else f"{first_edit} tool calls before the first edit")
                    + (f", anticipated {anticipated['hits']} of {anticipated['of']} first actions" if anticipated else "")
                )
                for path in row["reread_after"]:
                    self.stdout.write(f"    re-read {path[:160]}")
            for f in row["named_by_pattern"]:
                self.stdout.write(f"  named by a pattern: {f['text'][:160]}")
            if row["lost"]:
                self.stdout.write("  lost:")
                for f in row["lost"]:
                    again = "  (needed again)" if f["used_after"] else ""
                    self.stdout.write(f"    turn {f['turn']:>3}  {f['kind']:<10} {f['text'][:160]}{again}")
