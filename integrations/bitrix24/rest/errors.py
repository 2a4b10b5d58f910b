"""What can go wrong talking to Bitrix24, split by what the caller should do about it.

`TransientError`: try again later (rate limits, overload, 5xx, HTML error pages, network).
`PermanentError`: retrying the same request will fail the same way until someone changes the
configuration or the data (bad webhook, missing scope, invalid field, deleted entity).
They are the platform's `Transient` / `Permanent` failures (`inbox.platform.http`), so the
shared retry rule reads them like any other outside system's.
"""

from __future__ import annotations

from inbox.platform.http import Permanent, Transient


class Bitrix24Error(Exception):
    """An error from Bitrix24 or on the way to it. Messages never contain the webhook URL."""

    def __init__(
        self, code: str, description: str = "", *, status: int | None = None, method: str = ""
    ) -> None:
        self.code = code
        self.description = description
        self.status = status
        self.method = method
        text = f"{code or 'error'}: {description}" if description else (code or "error")
        super().__init__(f"{method}: {text}" if method else text)


class TransientError(Bitrix24Error, Transient):
    """Retry later. `retry_after` (seconds) is set when Bitrix24 said when; `in_doubt` when a
    write may have been applied although no answer came back (look before writing again)."""

    retry_after: float | None = None
    in_doubt: bool = False


class RateLimited(TransientError):
    """503 QUERY_LIMIT_EXCEEDED: the portal's request bucket is full."""


class OperationTimeLimited(TransientError):
    """429 OPERATION_TIME_LIMIT: this method used up its execution-time budget."""


class TokenExpired(TransientError):
    """401 expired_token: refresh the OAuth access token and repeat."""


class PermanentError(Bitrix24Error, Permanent):
    """Do not retry until something changes."""


class AuthError(PermanentError):
    """The webhook or token is wrong, or lacks a scope or a permission."""


class NotFound(PermanentError):
    """The entity does not exist (or is not visible to this user)."""


def classify(
    status: int | None, code: str, description: str = "", *, method: str = ""
) -> Bitrix24Error:
    """Map an HTTP status and a Bitrix24 error code to the error class that says what to do."""
    upper = (code or "").upper()
    desc = description or ""
    if upper == "QUERY_LIMIT_EXCEEDED":
        return RateLimited(code, desc, status=status, method=method)
    if upper == "OPERATION_TIME_LIMIT" or status == 429:
        return OperationTimeLimited(code, desc, status=status, method=method)
    if upper in {"EXPIRED_TOKEN", "INVALID_TOKEN"}:
        return TokenExpired(code, desc, status=status, method=method)
    if upper == "PORTAL_DELETED":
        return PermanentError(code, desc, status=status, method=method)
    if upper in {"OVERLOAD_LIMIT", "INTERNAL_SERVER_ERROR", "ERROR_UNEXPECTED_ANSWER"}:
        return TransientError(code, desc, status=status, method=method)
    if upper in {
        "NO_AUTH_FOUND",
        "INVALID_CREDENTIALS",
        "INSUFFICIENT_SCOPE",
        "ACCESS_DENIED",
        "USER_ACCESS_ERROR",
        "WRONG_AUTH_TYPE",
    } or status in {401, 403}:
        return AuthError(code, desc, status=status, method=method)
    if upper == "NOT_FOUND" or (not upper and desc.strip().lower().startswith("not found")):
        return NotFound(code, desc, status=status, method=method)
    if status is not None and status >= 500:
        return TransientError(code, desc, status=status, method=method)
    return PermanentError(code, desc, status=status, method=method)
