"""The current price list as a page: every item of a list's current version, searchable, with
its price and aliases editable in place. An edit is read and checked like an uploaded row and
becomes a new version (`assistant.knowledge.price_import.edit_item`), so it shows in the
history and can be rolled back. Another business's list or item is a 404."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST

from assistant.knowledge.price_import import ImportRejected, edit_item
from assistant.models import PriceItem, PriceList
from inbox.web.administered import require_business_admin

ITEMS_PER_PAGE = 50


def _matches(item: PriceItem, words: list[str]) -> bool:
    """Every word of the search is in the item's SKU, name, aliases or description, in any
    case (casefold: Cyrillic too, which SQLite's LIKE folds only for ASCII)."""
    text = " ".join((item.sku, item.name, item.aliases, item.description)).casefold()
    return all(word in text for word in words)


@login_required
@require_GET
def items_page(request: HttpRequest, list_id: int) -> HttpResponse:
    businesses = require_business_admin(request)
    price_list = (
        PriceList.objects.filter(pk=list_id, business__in=businesses)
        .select_related("business", "channel", "current_version")
        .first()
    )
    if price_list is None:
        raise Http404("no such price list")
    query = request.GET.get("q", "")[:200]
    items: list[PriceItem] = []
    if price_list.current_version_id is not None:
        items = list(PriceItem.objects.filter(version_id=price_list.current_version_id))
    words = query.casefold().split()
    shown = [item for item in items if _matches(item, words)] if words else items
    page = Paginator(shown, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "inbox/settings/price_list_items.html",
        {"price_list": price_list, "page": page, "query": query, "total": len(items)},
    )


@login_required
@require_POST
def edit_item_view(request: HttpRequest, item_id: int) -> HttpResponse:
    businesses = require_business_admin(request)
    item = (
        PriceItem.objects.filter(pk=item_id, version__price_list__business__in=businesses)
        .select_related("version__price_list")
        .first()
    )
    if item is None:
        raise Http404("no such item")
    back = reverse("settings_price_list_items", args=[item.version.price_list_id])
    query = request.POST.get("q", "")[:200]
    if query:
        back += "?" + urlencode({"q": query})
    try:
        version = edit_item(
            item, request.POST.get("price", ""), request.POST.get("aliases", ""), request.user
        )
    except ImportRejected as exc:
        text = gettext("“%(name)s” was not changed: %(why)s")
        messages.error(request, text % {"name": item.name, "why": exc})
        return redirect(back)
    text = gettext("Saved “%(name)s”: the list is now version %(number)s.")
    messages.success(request, text % {"name": item.name, "number": version.number})
    return redirect(back)
