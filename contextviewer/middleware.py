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
