"""The Bitrix24 outbound event handler. Thin: all decisions are in events.py."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from integrations.bitrix24 import events


def _declares_too_much(request: HttpRequest) -> bool:
    """Whether the declared Content-Length is over the limit (one that is absent or not ASCII
    digits is not: the body's real length is checked again once read)."""
    raw = str(request.META.get("CONTENT_LENGTH") or "")
    limit = settings.BITRIX24_EVENT_MAX_BODY_BYTES
    return raw.isascii() and raw.isdigit() and (len(raw) > 18 or int(raw) > limit)


@csrf_exempt
@require_POST
def bitrix24_events(request: HttpRequest) -> HttpResponse:
    # A declared oversize body is refused before it is read into memory.
    status = 413 if _declares_too_much(request) else events.receive(request.body)
    return HttpResponse("OK" if status == 200 else "", status=status, content_type="text/plain")
