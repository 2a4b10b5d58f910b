"""The Bitrix24 outbound event handler. Thin: all decisions are in events.py."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from integrations.bitrix24 import events


def _declared_length(request: HttpRequest) -> int:
    """The Content-Length the client declared (0 when absent or not ASCII digits: the body's
    real length is checked again once read)."""
    raw = str(request.META.get("CONTENT_LENGTH") or "")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 19 else 0


@csrf_exempt
@require_POST
def bitrix24_events(request: HttpRequest) -> HttpResponse:
    if _declared_length(request) > settings.BITRIX24_EVENT_MAX_BODY_BYTES:
        status = 413  # refused before the body is read into memory
    else:
        status = events.receive(request.body)
    return HttpResponse("OK" if status == 200 else "", status=status, content_type="text/plain")
