"""Which business a business admin's page is about: the one reading of `?business=`.

The settings pages and the reports serve admins (role `admin` of a business) only, and each
shows one of the businesses they administer:

    page = administered_business(request)   # page.business, page.businesses (the switcher)

A user who administers no business gets 403; `?business=` naming anything but one of theirs
(another business, a number that is no business, not a number) is a 404 on every admin page,
those about all of the user's businesses too, so a page never shows, nor a form writes to, a
business the URL did not name; without `?business=` the page is about the first of theirs by
name. The rule of who administers what is the core's
(`inbox.conversations.access.administered_businesses`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest

from inbox.conversations import access
from inbox.conversations.models import Business
from inbox.web.params import parse_id


@dataclass(frozen=True)
class AdministeredBusiness:
    """The business a page is about, and every business the user administers (by name)."""

    business: Business
    businesses: list[Business]


def require_business_admin(request: HttpRequest) -> list[Business]:
    """The businesses the user administers, by name; PermissionDenied (403) when none, 404
    when `?business=` names none of them."""
    return administered_business(request).businesses


def administered_business(request: HttpRequest) -> AdministeredBusiness:
    """The business `?business=` names among the user's (403 for a non-admin, 404 for any
    other value), or the first of theirs when the query names none."""
    businesses = list(access.administered_businesses(request.user).order_by("name"))
    if not businesses:
        raise PermissionDenied("business admins only")
    raw = request.GET.get("business", "")
    if not raw:
        return AdministeredBusiness(businesses[0], businesses)
    named_id = parse_id(raw)
    named = next((b for b in businesses if b.pk == named_id), None)
    if named is None:
        raise Http404("no such business")
    return AdministeredBusiness(named, businesses)
