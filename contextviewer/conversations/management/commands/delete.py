"""python manage.py delete CONVERSATION [--yes]

Deletes a conversation (its id or its session's external id) with its sub-agents, folds, probes,
review items, search entries and unused upload; builds made from it keep their copy. Asks for
confirmation unless --yes. The deletion is recorded in the project's audit log."""

from contextviewer.conversations import deletion
from contextviewer.conversations.management.base import ConversationCommand


class Command(ConversationCommand):
    command_name = "delete"
    help = "Delete a conversation with its sub-agents, folds, probes, search entries and unused upload."

    def add_arguments(self, parser):
        parser.add_argument("conversation", help="conversation id or session (external) id")
        parser.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")

    def handle(self, *args, **opts):
        conv = self.only_conversation(opts["conversation"], verb="delete")
        plan = deletion.plan(conv)
        what = f"{plan.messages} message{'s' if plan.messages != 1 else ''}"
        if plan.subagents:
            what += f", {plan.subagents} sub-agent{'s' if plan.subagents != 1 else ''}"
        if plan.folds:
            what += f", {plan.folds} fold{'s' if plan.folds != 1 else ''}"
        self.stdout.write(
            f"conversation {conv.pk} ({conv.title or conv.external_id}) in {conv.project.name}: {what}"
        )
        if plan.builds_kept:
            self.stdout.write(f"  {plan.builds_kept} build{'s' if plan.builds_kept != 1 else ''} made from it keep their copy")
        if not opts["yes"]:
            try:
                answer = input("Delete it for good? Type yes to confirm: ")
            except EOFError:
                answer = ""
            if answer.strip().lower() not in ("yes", "y"):
                self.fail("not confirmed; nothing was deleted (use --yes to skip the question)", code=1)
        done = deletion.delete_conversation(conv, actor=None, via="command")
        self.stdout.write(
            f"deleted conversation {done.id} ({done.external_id}): {done.messages} message{'s' if done.messages != 1 else ''}, "
            f"{done.conversations - 1} sub-agent{'s' if done.conversations != 2 else ''}, "
            f"{done.search_entries} search entr{'ies' if done.search_entries != 1 else 'y'}, "
            f"{done.sources_removed} source{'s' if done.sources_removed != 1 else ''} and {len(done.uploads_removed)} "
            f"upload{'s' if len(done.uploads_removed) != 1 else ''} removed"
        )
