"""python manage.py window CONVERSATION --call N|last [--json]

What model call N of a conversation carried, in the order sent: the summary of the fold in effect,
the messages it preserved, then every message after it up to the call (conversations/windows.py,
the one loader the page and the API read too). --json prints
{"call": N, "calls": .., "measured_input": .., "estimated_context": .., "items": [{"role", "kind",
"tool_id", "tool_name", "text", "tokens"}, ...]}."""

import json

from contextviewer.conversations import windows
from contextviewer.conversations.management.base import ConversationCommand


class Command(ConversationCommand):
    command_name = "window"
    help = "Print what one model call carried: the items of its window, in the order sent."

    def add_arguments(self, parser):
        parser.add_argument("conversation", help="conversation id or session (external) id")
        parser.add_argument("--call", default="last", help="the call's number (1 = the first, as on the curve) or last (default)")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args, **opts):
        conv = self.only_conversation(opts["conversation"], verb="show")
        try:
            window = windows.call_window(conv, opts["call"])
        except windows.NoSuchCall as e:
            self.fail(str(e), code=1)
        if opts["json"]:
            self.stdout.write(json.dumps(window.as_dict(), ensure_ascii=False, indent=1))
            return
        measured = f"{window.measured:,} tokens measured" if window.measured else "not measured in the log"
        self.stdout.write(
            f"call {window.call} of {window.calls} ({window.model or 'model not recorded'}): {measured}; "
            f"{len(window.items)} items, {window.item_tokens:,} tokens of text (estimate)"
        )
        for i, item in enumerate(window.items, 1):
            label = item["kind"] + (f" {item['tool_name']}" if item.get("tool_name") else "") + (f" [{item['tool_id']}]" if item.get("tool_id") else "")
            text = " ".join((item["text"] or "").split())
            self.stdout.write(f"{i:>4}. {item['role']:<9} {label:<40} {item['tokens']:>7,}  {text[:90]}")
            if item.get("note"):
                self.stdout.write(f"      ({item['note']})")
