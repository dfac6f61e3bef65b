from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "contextviewer.conversations"
    label = "conversations"
    # Stored copies of transcript text that `manage.py mask` masks again (ingest/remask.py): name,
    # model, text fields, JSON fields. Messages are masked apart (raw lines, blocks, search).
    masked_copies = (
        ("folds", "Fold", ("summary_text",), ()),
        ("conversations", "Conversation", ("title", "cwd", "git_branch", "cli_version", "agent_type"),
         ("agent_links", "lineage", "model_names")),
    )
