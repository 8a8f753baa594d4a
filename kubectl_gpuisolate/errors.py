"""The error types.

Every failure the plugin reports is one of these classes.  Only ``cli.main``
catches them, prints the one-line message and returns ``exit_code``.  The codes
themselves are in exits.py.
"""

from typing import Optional

from .exits import (
    EXIT_API,
    EXIT_AUTH,
    EXIT_CONFIG,
    EXIT_CONFLICT,
    EXIT_CONNECTION,
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    SIGNALS,
)


class GpuIsolateError(Exception):
    """A failure with a one-line, user-facing message that says what to fix."""

    exit_code = EXIT_API

    def __init__(self, message: str, *, exit_code: Optional[int] = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(GpuIsolateError):
    exit_code = EXIT_USAGE


class ConfigError(GpuIsolateError):
    exit_code = EXIT_CONFIG


class ConnectionFailed(GpuIsolateError):
    exit_code = EXIT_CONNECTION


class AuthError(GpuIsolateError):
    exit_code = EXIT_AUTH


class NotFound(GpuIsolateError):
    exit_code = EXIT_NOT_FOUND


class ConflictError(GpuIsolateError):
    exit_code = EXIT_CONFLICT


class ApiError(GpuIsolateError):
    """An API response the caller did not expect.  ``status`` is the HTTP code; the subclasses
    below name the statuses callers act on, so they catch by type (``api_error`` picks it)."""

    exit_code = EXIT_API

    def __init__(self, message, *, status=0, reason="", causes=(), retry_after=None,
                 exit_code=None):
        super().__init__(message, exit_code=exit_code)
        self.status = status
        self.reason = reason
        self.causes = tuple(causes)
        self.retry_after = retry_after

    def has_cause(self, reason):
        """True when one of the Status's ``details.causes`` has this reason."""
        return any(cause.get("reason") == reason for cause in self.causes)


class Unauthorized(ApiError):
    """401: the server rejected the credentials."""

    exit_code = EXIT_AUTH


class Forbidden(ApiError):
    """403: RBAC said no (or, with a NamespaceTerminating cause, the namespace is going away)."""

    exit_code = EXIT_AUTH


class ApiNotFound(ApiError, NotFound):
    """404: also a ``NotFound``, so ``except NotFound`` catches it."""

    exit_code = EXIT_NOT_FOUND


class Conflict(ApiError, ConflictError):
    """409: a precondition (resourceVersion, UID) failed or the object exists."""

    exit_code = EXIT_CONFLICT


class Gone(ApiError):
    """410: the resourceVersion of a watch or list is too old."""


class TooManyRequests(ApiError):
    """429: throttling, or an eviction a PodDisruptionBudget refuses."""


class ServerError(ApiError):
    """5xx: the server (or a proxy in front of it) failed; the request may have been applied."""


_BY_STATUS = {401: Unauthorized, 403: Forbidden, 404: ApiNotFound, 409: Conflict, 410: Gone,
              429: TooManyRequests}


def api_error_class(status):
    """The ApiError subclass of an HTTP status (ApiError itself for the others: 400, 422, ...)."""
    if 500 <= status <= 599:
        return ServerError
    return _BY_STATUS.get(status, ApiError)


def api_error(message, *, status, **kwargs):
    """An ApiError of the class ``status`` calls for (see ``ApiError.__init__`` for kwargs)."""
    return api_error_class(status)(message, status=status, **kwargs)


class Interrupted(GpuIsolateError):
    """SIGINT or SIGTERM arrived; the command has already printed its summary."""

    def __init__(self, signum):
        name, code = SIGNALS[signum]
        super().__init__(f"interrupted by {name}", exit_code=code)
