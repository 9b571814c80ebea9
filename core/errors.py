"""One exception root for the service; each error knows its HTTP status and the field it is about."""

from __future__ import annotations

from typing import Any


class KernelGraphError(Exception):
    """Root of every error the service raises on purpose."""

    status_code = 500
    code = "internal_error"

    def __init__(self, message: str, *, field: str | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            body["field"] = self.field
        if self.details is not None:
            body["details"] = self.details
        return body


class InvalidInput(KernelGraphError):
    status_code = 422
    code = "invalid_input"


class NotFound(KernelGraphError):
    status_code = 404
    code = "not_found"


class Conflict(KernelGraphError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(KernelGraphError):
    status_code = 413
    code = "payload_too_large"


class UnsupportedMediaType(KernelGraphError):
    status_code = 415
    code = "unsupported_media_type"


class Unauthorized(KernelGraphError):
    status_code = 401
    code = "unauthorized"


class Forbidden(KernelGraphError):
    status_code = 403
    code = "forbidden"


class RateLimited(KernelGraphError):
    """The API key sent more requests than its rate limit allows; retry after `retry_after_s`."""

    status_code = 429
    code = "rate_limited"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        details: Any = None,
        retry_after_s: int = 1,
        limit: int = 0,
    ) -> None:
        super().__init__(message, field=field, details=details)
        self.retry_after_s = retry_after_s
        self.limit = limit


class Retryable(KernelGraphError):
    """The store is unreachable or the failure is transient: the same call may succeed later."""

    status_code = 503
    code = "unavailable"
    retry_after_s = 2


class CommandError(KernelGraphError):
    """A command-line mistake or failure, named by the command that found it: the `kernelgraph` app
    shows it as one line on stderr (one JSON object on stdout with --json) and exits with `exit_code`
    (2: a usage error, 1: the command failed; docs/operations.md lists the exit codes)."""

    status_code = 400
    code = "command_error"

    def __init__(self, message: str, *, exit_code: int = 1, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.exit_code = exit_code


class LocalServerError(KernelGraphError):
    """The local Neo4j server could not be installed, started or stopped; the message says how to fix it."""

    code = "local_server"
