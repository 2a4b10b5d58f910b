"""Every time a manager sees is in their business's time zone (`Business.timezone`).

Pages: `BusinessTimeMiddleware` activates the zone of the user's business for the request (a
user of several businesses gets the first by name; the reports page uses its own business's
zone throughout). Websocket fragments are rendered without a request: `fragments.py` renders
each one inside `business_time(business_id)`. The inbox's language is activated the same way
by `local_language.py` (`Business.language` is the assistant's, not the inbox's).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from zoneinfo import ZoneInfo

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from inbox.conversations import access
from inbox.conversations.models import Business
from inbox.upkeep.alerts import business_zone

# A push renders several fragments per event: the zone is read once per business a minute.
ZONE_CACHE_SECONDS = 60.0
_zones: dict[int, tuple[float, ZoneInfo]] = {}


def zone_of_business(business_id: int) -> ZoneInfo:
    now = time.monotonic()
    cached = _zones.get(business_id)
    if cached is not None and now - cached[0] < ZONE_CACHE_SECONDS:
        return cached[1]
    name = Business.objects.filter(pk=business_id).values_list("timezone", flat=True).first()
    zone = business_zone(name or "UTC")
    _zones[business_id] = (now, zone)
    return zone


@contextmanager
def business_time(business_id: int) -> Iterator[None]:
    with timezone.override(zone_of_business(business_id)):
        yield


class BusinessTimeMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return self.get_response(request)
        name = access.visible_businesses(user).order_by("name").values_list("timezone", flat=True)
        with timezone.override(business_zone(name.first() or "UTC")):
            return self.get_response(request)
