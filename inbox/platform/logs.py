"""Structured logs: JSON lines, a correlation id carried from webhook to task to model call to
send to CRM call, and no customer data (phone numbers and message text masked).

The correlation id lives in a context variable. The webhook sets one per request and writes it
into each event; the ingest consumer binds it while accepting; Celery carries it in a task header
(see `inbox/site/celery.py`), so the turn, its model call, the send and the CRM sync all log it.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.parse import unquote_plus

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

correlation_id: ContextVar[str] = ContextVar("correlation_id", default="")

# Seven or more digits, with a + and up to two separators between them: phone numbers, wa_ids,
# JIDs, as people type them (spaces of any kind, hyphens and dashes of any kind, brackets, dots,
# slashes, underscores). The last two digits are kept so operators can still tell chats apart.
_SEPARATOR = r"[\s\-\u2010-\u2015\u2212()./_]"
PHONE = re.compile(rf"(?<![\w.])\+?\d(?:{_SEPARATOR}{{0,2}}\d){{6,}}(?!\w|[./]\d)")
# What PHONE finds that is no phone number: an IPv4 address, and two digit groups joined by one
# dot or slash (a decimal amount, `1234/5678` in a path).
_IPV4 = re.compile(r"(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)")
_TWO_GROUPS = re.compile(r"\d+[./]\d+")
# A WhatsApp business-scoped user id (`US.13491208655302741918`, a parent's `US.ENT.…`): who
# the customer is as much as their number. Its country code and last two characters are kept.
BSUID = re.compile(r"(?<![\w.])([A-Z]{2})\.(?:ENT\.)?(?=[A-Za-z]*\d)[A-Za-z0-9]{6,128}(?![\w.])")
# Extra fields whose values are customer content, never logged as they are.
CONTENT_KEYS = frozenset(
    {"text", "body", "reply", "transcript", "message_text", "content", "summary"}
)
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
}


def new_correlation_id() -> str:
    return uuid.uuid4().hex[:16]


@contextmanager
def bound(cid: str | None) -> Iterator[str]:
    """Run a block with `cid` (or a fresh id) as the correlation id."""
    value = cid or new_correlation_id()
    token = correlation_id.set(value)
    try:
        yield value
    finally:
        correlation_id.reset(token)


def mask_phone_numbers(text: str) -> str:
    def mask(match: re.Match[str]) -> str:
        found = match.group(0)
        if _IPV4.fullmatch(found) or _TWO_GROUPS.fullmatch(found):
            return found
        return "…" + re.sub(r"\D", "", found)[-2:]

    text = BSUID.sub(lambda m: f"{m.group(1)}.…{m.group(0)[-2:]}", text)
    return PHONE.sub(mask, text)


# A query parameter that carries a secret (the webhook handshake's `hub.verify_token`, a token
# in a link): its value never reaches an access log.
SECRET_PARAMETERS = re.compile(
    r"((?:verify_token|token|secret|password|api_key|key|signature|auth)=)[^&\s]*", re.IGNORECASE
)


def mask_request_line(request: str) -> str:
    """`GET /inbox/?q=77010000001&hub.verify_token=x` → `GET /inbox/?q=…01&hub.verify_token=***`.

    Secrets are masked in the line as sent; the line is then decoded, so that a number typed
    with spaces or a plus (`q=%2B7+701+555+12+34`) is seen and masked as one, and anything that
    is not printable in it (an encoded newline) becomes `?`, after the masking (a number typed
    with non-breaking spaces is still one number)."""
    decoded = unquote_plus(SECRET_PARAMETERS.sub(r"\1***", request), errors="replace")
    return "".join(c if c.isprintable() else "?" for c in mask_phone_numbers(decoded))


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return mask_phone_numbers(value)
    if isinstance(value, list | tuple):
        return [_masked(v) for v in value]
    if isinstance(value, dict):
        return {k: ("[masked]" if k in CONTENT_KEYS else _masked(v)) for k, v in value.items()}
    return value


class PrivacyFilter(logging.Filter):
    """Adds the correlation id and masks customer data in every record, whatever logged it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.correlation_id = correlation_id.get()
        if isinstance(record.msg, str):
            record.msg = mask_phone_numbers(record.msg)
        if record.args:
            if isinstance(record.args, dict):
                record.args = {k: _masked(v) for k, v in record.args.items()}
            else:
                record.args = tuple(_masked(a) for a in record.args)
        for key, value in list(vars(record).items()):
            if key in _STANDARD or key == "correlation_id":
                continue
            record.__dict__[key] = "[masked]" if key in CONTENT_KEYS else _masked(value)
        return True


class AccessLogFilter(logging.Filter):
    """For a server's access logger (uvicorn's `uvicorn.access`): its request line, path and
    query string included, is masked like daphne's (`inbox/site/web_server.py`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                mask_request_line(a) if isinstance(a, str) else a for a in record.args
            )
        return True


class JsonLines(JsonFormatter):
    """One JSON object per line: time, level, logger, event, correlation id, extra fields."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault(
            "rename_fields", {"levelname": "level", "name": "logger", "message": "event"}
        )
        kwargs.setdefault("timestamp", True)
        # uvicorn repeats its own lines with terminal colour codes in `color_message`.
        kwargs.setdefault("reserved_attrs", [*RESERVED_ATTRS, "color_message"])
        super().__init__("%(levelname)s %(name)s %(message)s", *args, **kwargs)

    def formatException(self, ei: Any) -> str:
        return mask_phone_numbers(str(super().formatException(ei)))
