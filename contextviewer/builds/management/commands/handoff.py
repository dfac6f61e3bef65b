"""python manage.py handoff CONVERSATION [--provider NAME] [--json]

Folds the loaded view of a conversation (its id or its session's external id) into a handoff
summary: the same job the page and the API start, run in this process."""


from contextviewer.builds import handoffs as handoff
from contextviewer.conversations.management.base import ConversationCommand
from contextviewer.providers.base import ProviderError


class Command(ConversationCommand):
    command_name = "handoff"
    help = "Fold a conversation's loaded view into a handoff summary (a new fold at its end)."

    def add_arguments(self, parser):
        parser.add_argument("conversation", help="conversation id or session (external) id")
        parser.add_argument("--provider", default="", help="builtin, openai or anthropic (default: the project's)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        conv = self.conversation(opts["conversation"], as_json=opts["json"])
        try:
            job, _ = handoff.start_handoff(conv, provider=opts["provider"] or None, enqueue=False)
        except ProviderError as exc:
            self.fail(str(exc), as_json=opts["json"])
        done = self.run_job(job, as_json=opts["json"])
        if opts["json"]:
            self.write_job_json(done)
        else:
            r = done.result
            self.stdout.write(r["summary"])
            self.stderr.write(
                f"fold {r['fold_id']} at position {r['position']}: {r['tokens_before']} -> {r['tokens_after']} tokens ({r['provider']})"
            )
