"""A strict Content-Security-Policy on every response: no inline scripts, no remote hosts."""

CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        return response


class UploadLimitMiddleware:
    """Refuse a request body above the upload cap before Django reads any of it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from django.conf import settings
        from django.http import HttpResponse, JsonResponse

        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = settings.MAX_UPLOAD_BYTES
        if length > limit + 1024 * 1024:  # room for the multipart envelope
            message = (
                f"The upload is {length / 1e6:.0f} MB, over the {limit / 1e6:.0f} MB limit. "
                "Import large files from disk with `python manage.py import PATH`."
            )
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": message}, status=413)
            return HttpResponse(message, status=413, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class PrivateNoStoreMiddleware:
    """`Cache-Control: private, no-store` on every response to a signed-in user or an API token, so
    no browser, proxy or shared cache keeps a page or an answer (conversations hold code, secrets,
    tokens) after the person has gone. Static files (served before this by WhiteNoise), the login
    page and an answer that already says no-store keep their own headers; so does a conversation's
    fragment that says `private, no-cache` with an ETag (views.cached_fragment): the reader's own
    browser keeps it and asks each time whether it changed (a 304), never a shared cache.

    Signing out clears the browser's cache of this site (`Clear-Site-Data: "cache"`), so those
    fragments do not stay on the computer after the person has gone (docs/security.md, "Caching")."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        from django.conf import settings
        from django.urls import reverse

        response = self.get_response(request)
        path = request.path_info
        if path == reverse("logout"):
            response["Clear-Site-Data"] = '"cache"'
        user = getattr(request, "user", None)  # an API token sets it during the view
        if user is None or not user.is_authenticated:
            return response
        if path.startswith("/" + settings.STATIC_URL.lstrip("/")) or path == reverse("login"):
            return response
        cache_control = response.get("Cache-Control", "")
        if "no-store" in cache_control:
            return response
        if "no-cache" in cache_control and "private" in cache_control and response.has_header("ETag"):
            return response  # revalidated each time, kept by the reader's browser only
        response["Cache-Control"] = "private, no-store"
        return response


# --- the database out of reach: a 503 that says so, and the next request reconnects ---------------

# Seconds a client is told to wait (Retry-After) before it sends the request again.
RETRY_AFTER_BUSY = 30  # SQLite's write lock held by an import
RETRY_AFTER_RESTART = 5  # PostgreSQL restarting, or its connection lost


def database_unavailable(exc: BaseException) -> tuple[str, str, int] | None:
    """(title, message, seconds to wait) when ``exc`` says the database is out of reach for now: its
    connection lost (PostgreSQL restarting, a backend terminated) or SQLite's write lock held past
    its timeout (a long import). None for any other error."""
    from django.db import InterfaceError, OperationalError

    if not isinstance(exc, (OperationalError, InterfaceError)):
        return None
    if "database is locked" in str(exc) or "database table is locked" in str(exc):
        return (
            "The database is busy",
            "The database is busy writing an import, and this request could not wait for it any longer.",
            RETRY_AFTER_BUSY,
        )
    return (
        "The database is not reachable",
        "The connection to the database was lost (it may be restarting).",
        RETRY_AFTER_RESTART,
    )


def database_unavailable_response(request, exc: BaseException):
    """The 503 answer to ``exc`` (None when it is not the database out of reach): JSON for the API,
    text for an htmx request, else templates/503.html, which reads nothing from the database. The
    broken connection is closed, so the next request opens a new one."""
    from django.db import connections
    from django.http import HttpResponse, JsonResponse
    from django.template import loader

    found = database_unavailable(exc)
    if found is None:
        return None
    title, message, retry_after = found
    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:
            conn.close_if_unusable_or_obsolete()
    advice = f"Nothing was changed by this request; try again in {retry_after} seconds."
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": f"{message} {advice}", "retry_after": retry_after}, status=503)
    elif request.headers.get("HX-Request"):
        response = HttpResponse(f"{message} {advice}", status=503, content_type="text/plain; charset=utf-8")
    else:
        context = {"title": title, "message": message, "retry_after": retry_after}
        response = HttpResponse(loader.get_template("503.html").render(context), status=503)
    response["Retry-After"] = str(retry_after)
    response["Cache-Control"] = "no-store"
    return response


class DatabaseUnavailableMiddleware:
    """A view (or its template) that loses the database answers 503 with Retry-After, not 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        return database_unavailable_response(request, exception)


def server_error(request, *args, **kwargs):
    """handler500: the database out of reach in a middleware (the session, the user) answers as in
    a view (503, Retry-After); any other error is Django's plain 500."""
    import sys

    from django.views.defaults import server_error as django_server_error

    return database_unavailable_response(request, sys.exc_info()[1]) or django_server_error(request, *args, **kwargs)


# --- a full disk: 507 that says so, not a bare 500 --------------------------------------------

DISK_FULL_MESSAGE = (
    "The server's disk is full: nothing of this request was stored. Free space on the server "
    "(its data directory) and try again."
)


class DiskFullMiddleware:
    """A write that found no space left (OSError 28, or the quota's 122) answers 507 Insufficient
    Storage with what happened and what to do (an upload through the API, a multipart body Django
    could not spool). The upload page says it on the page itself (ingest/views.py)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        import errno

        from django.http import HttpResponse, JsonResponse

        if not isinstance(exception, OSError) or exception.errno not in (errno.ENOSPC, errno.EDQUOT):
            return None
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": DISK_FULL_MESSAGE}, status=507)
        return HttpResponse(DISK_FULL_MESSAGE, status=507, content_type="text/plain; charset=utf-8")
