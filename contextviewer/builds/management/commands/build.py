"""python manage.py build CONVERSATION --turns 3,7-9 --folds 1 [--after-fold N] [--json]

Builds a new conversation from selected turns and folds' summaries of CONVERSATION (its id or its
session's external id): the same job the page and the API start, run in this process."""


from contextviewer.builds import services as builds
from contextviewer.conversations.management.base import ConversationCommand


class Command(ConversationCommand):
    command_name = "build"
    help = "Build a new conversation from selected turns and folds' summaries (the source is not changed)."

    def add_arguments(self, parser):
        parser.add_argument("conversation", help="conversation id or session (external) id")
        parser.add_argument("--turns", default="", help="turn numbers, e.g. 3,7-9")
        parser.add_argument("--folds", default="", help="fold numbers (from 1) whose summaries to include, e.g. 1")
        parser.add_argument(
            "--after-fold", default=None, metavar="N",
            help="fold N's summary plus what followed it, up to the next fold (for the latest fold: the loaded view)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        conv = self.conversation(opts["conversation"], as_json=opts["json"])
        try:
            job = builds.start_build(conv, opts["turns"], opts["folds"], after_fold=opts["after_fold"], enqueue=False)
        except builds.BuildError as exc:
            self.fail(str(exc), as_json=opts["json"])
        done = self.run_job(job, as_json=opts["json"])
        r = done.result
        if opts["json"]:
            self.write_job_json(done)
            return
        messages, turns = r["messages"], r["turns"]
        self.stdout.write(
            f"conversation {r['conversation_id']} ({r['external_id']}): {messages} message{'s' if messages != 1 else ''}, "
            f"{turns} turn{'s' if turns != 1 else ''}"
        )
        for note in r["notes"]:
            self.stdout.write(f"  note: {note}")
