"""The Bitrix24 outbound event handler. Thin: all decisions are in events.py."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from integrations.bitrix24 import events


@csrf_exempt
@require_POST
def bitrix24_events(request: HttpRequest) -> HttpResponse:
    status = events.receive(request.body)
    return HttpResponse("OK" if status == 200 else "", status=status, content_type="text/plain")
