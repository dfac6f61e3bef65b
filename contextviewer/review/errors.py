"""The one error review raises for a request a person should read."""


class ReviewError(Exception):
    """A bad request a person should read (shown as the form's error)."""
