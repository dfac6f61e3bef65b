"""python manage.py summarize_again CONVERSATION --fold N [--provider NAME] [--json]

Writes another summary of fold N (numbered from 1 as on the conversation page and in builds) of
CONVERSATION (its id or its session's external id) with the chosen provider (builtin, or one
configured for the project; default: the project's), and stores it beside the original: the
same job the page and the API start, run in this process. Pairwise review then compares them."""


from contextviewer.conversations import segments
from contextviewer.conversations.management.base import ConversationCommand
from contextviewer.providers.base import ProviderError
from contextviewer.review import alternatives


class Command(ConversationCommand):
    command_name = "summarize_again"
    help = "Summarize a fold again with another provider: a second summary of the same segment, for pairwise review."

    def add_arguments(self, parser):
        parser.add_argument("conversation", help="conversation id or session (external) id")
        parser.add_argument("--fold", required=True, help="fold number, from 1, as on the conversation page")
        parser.add_argument("--provider", default="", help="builtin, openai, anthropic (default: the project's)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args, **opts):
        conv = self.conversation(opts["conversation"], as_json=opts["json"])
        folds = segments.segment_folds(conv)
        raw = str(opts["fold"]).strip()
        if not raw.isdigit() or not 1 <= int(raw) <= len(folds):
            known = f"folds 1–{len(folds)}" if folds else "no folds"
            self.fail(f"no fold {raw!r} in this conversation (it has {known})", as_json=opts["json"])
        fold = folds[int(raw) - 1]
        try:
            job = alternatives.start(fold, provider=opts["provider"] or None, enqueue=False)
        except ProviderError as exc:
            self.fail(str(exc), as_json=opts["json"])
        done = self.run_job(job, as_json=opts["json"])
        r = done.result
        if opts["json"]:
            self.write_job_json(done)
            return
        self.stdout.write(f"fold {raw} summarized again as fold {r['fold_id']} ({r['origin']}), beside fold {r['original_fold_id']}")
