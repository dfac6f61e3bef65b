import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "contextviewer.settings")
application = get_wsgi_application()

from contextviewer import warmup  # noqa: E402 - after the application: settings and apps are ready

warmup.warm()
