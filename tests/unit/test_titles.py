"""Titles from a first request: harness tags out, one line, cut on a word with an ellipsis."""

from contextviewer.core import titles


def test_command_tags_are_stripped_and_a_commands_name_and_arguments_kept():
    text = (
        "<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n"
        "<command-args>src/app.py</command-args>"
    )
    assert titles.from_request(text) == "/review src/app.py"
    assert titles.is_command_only(text)


def test_reminders_command_output_and_notifications_are_dropped_with_their_content():
    text = (
        "<system-reminder>As you answer, use the TodoWrite tool</system-reminder>"
        "<local-command-stdout>Set model to opus</local-command-stdout>"
        "<task-notification><task-id>b1</task-id>done</task-notification>"
        "Add a dark mode toggle to the settings page"
    )
    assert titles.from_request(text) == "Add a dark mode toggle to the settings page"
    assert not titles.is_command_only(text)
    # an unclosed reminder does not leak its text either
    assert titles.from_request("Fix the build <system-reminder>hidden rules") == "Fix the build"


def test_a_long_request_is_cut_after_a_whole_word_with_an_ellipsis():
    text = "Please migrate the billing module to Stripe version three and keep the old webhooks working"
    title = titles.from_request(text, 40)
    assert len(title) <= 40 and title.endswith("…")
    assert title == "Please migrate the billing module to…"
    assert text.startswith(title[:-1])
    # short enough: unchanged, no ellipsis
    assert titles.from_request("Fix the login form", 40) == "Fix the login form"
    # one very long word: cut inside it rather than leaving nothing
    assert titles.cut("x" * 100, 20) == "x" * 19 + "…"


def test_html_like_text_in_a_request_is_kept():
    assert titles.from_request("Why does <div> overflow in the header?") == "Why does <div> overflow in the header?"
