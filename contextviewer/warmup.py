"""What a web process loads before its first request, so the first person to open a page does not
wait for it: the URL configuration (every view module and the API's schemas), the page templates,
the Markdown parser and the HTML cleaner. Called by wsgi.py as a worker starts (`manage.py bench
vs-claude-code-log` times a first page after it, as a person meets it on a running server)."""

from __future__ import annotations

import threading

TEMPLATES = (
    "viewer/index.html",
    "viewer/conversation.html",
    "viewer/turn.html",
    "viewer/segment.html",
)


def warm() -> None:
    from django.template.loader import get_template
    from django.urls import get_resolver, reverse

    get_resolver().url_patterns  # noqa: B018 - imports the URL configuration
    reverse("index")  # builds the reverse lookup tables
    for name in TEMPLATES:
        get_template(name)
    from contextviewer.display import rendering  # lazy: wsgi.py imports this module before Django is set up

    rendering.markdown_html("**warm** `up`\n\n1. a\n2. b")
    warm_prices()


def warm_prices() -> threading.Thread:
    """genai-prices' data (its snapshot of every provider, about 50 ms; more on a busy machine) read
    in a background thread, so the worker starts as fast and the first usage page or report does not
    wait for it. A price file that cannot be read is left for that page to say."""
    from contextviewer.usage import services  # lazy: wsgi.py imports this module before Django is set up

    def load() -> None:
        try:
            services.price_book()
        except services.BadQuery:
            pass

    thread = threading.Thread(target=load, name="warm-prices", daemon=True)
    thread.start()
    return thread
