"""The review's fix pages (`?source=flag:12`): add the customer's words to an item, add the
missing item, make an item "manager only", or mark a flag fixed after a rule line was added.
Thin: the work is `inbox.web.settings.review_fixes`; another business's entry or item is a
404."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods, require_POST

from assistant.knowledge.price_import import ImportRejected
from inbox.web.administered import require_business_admin
from inbox.web.params import parse_id
from inbox.web.settings import review_fixes
from inbox.web.settings.review_fixes import ReviewEntry


def _entry(request: HttpRequest) -> ReviewEntry:
    require_business_admin(request)
    source = request.POST.get("source") or request.GET.get("source", "")
    try:
        return review_fixes.entry_for(request.user, source)
    except review_fixes.NotFound:
        raise Http404("nothing to fix there") from None


def _saved(number: int) -> str:
    return gettext("Saved: the price list is now version %(number)s.") % {"number": number}


def _replay_first(
    request: HttpRequest, entry: ReviewEntry, fix: str, item_id: int, words: str, price: str = ""
) -> HttpResponse | None:
    """ "Replay first": the change tried on the chat's past turns (the replay's page, where it
    is applied or discarded); None, with the problem shown, when it cannot be tried."""
    try:
        run = review_fixes.replay_first(request.user, entry, fix, item_id, words, price)
    except review_fixes.NotFound:
        raise Http404("no such item") from None
    except ImportRejected as exc:
        messages.error(request, gettext("Not replayed: %(problem)s") % {"problem": exc})
        return None
    return redirect("settings_replay_run", run_id=run.pk)


@login_required
@require_http_methods(["GET", "POST"])
def add_alias(request: HttpRequest) -> HttpResponse:
    """The customer's words (prefilled from the message the bot answered) as another name of
    one of the chat's items."""
    entry = _entry(request)
    words = request.POST.get("words", entry.customer_words)[:200]
    chosen = parse_id(request.POST.get("item", ""))
    if request.method == "POST" and request.POST.get("then") == "replay":
        tried = _replay_first(request, entry, "alias", chosen or 0, words)
        if tried is not None:
            return tried
    elif request.method == "POST":
        try:
            version = review_fixes.fix_alias(request.user, entry, chosen or 0, words)
        except review_fixes.NotFound:
            raise Http404("no such item") from None
        except ImportRejected as exc:
            messages.error(request, gettext("Not saved: %(problem)s") % {"problem": exc})
        else:
            messages.success(request, _saved(version.number))
            return redirect("review")
    read = {name for _sku, name in entry.items}
    return render(
        request,
        "inbox/settings/review_fix.html",
        {
            "entry": entry,
            "fix": "alias",
            "words": words,
            "items": review_fixes.items_for(entry),
            "chosen": chosen,
            "read": read,
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def add_item(request: HttpRequest) -> HttpResponse:
    """The item the list was missing, its name and price prefilled from the customer's words."""
    entry = _entry(request)
    name = request.POST.get("name", entry.customer_words)[:300]
    price = request.POST.get("price", review_fixes.suggested_price(entry.customer_words))[:40]
    if request.method == "POST" and request.POST.get("then") == "replay":
        tried = _replay_first(request, entry, "item", 0, name, price)
        if tried is not None:
            return tried
    elif request.method == "POST":
        try:
            version = review_fixes.fix_new_item(request.user, entry, name, price)
        except review_fixes.NotFound:
            messages.error(request, gettext("Upload a price list first."))
        except ImportRejected as exc:
            messages.error(request, gettext("Not saved: %(problem)s") % {"problem": exc})
        else:
            messages.success(
                request,
                gettext("Added: the price list is now version %(number)s.")
                % {"number": version.number},
            )
            return redirect("review")
    return render(
        request,
        "inbox/settings/review_fix.html",
        {"entry": entry, "fix": "item", "name": name, "price": price},
    )


@login_required
@require_http_methods(["GET", "POST"])
def manager_only(request: HttpRequest) -> HttpResponse:
    """One of the chat's items marked "manager only": the assistant hands it to a person."""
    entry = _entry(request)
    chosen = parse_id(request.POST.get("item", ""))
    if request.method == "POST" and request.POST.get("then") == "replay":
        tried = _replay_first(request, entry, "manager", chosen or 0, "")
        if tried is not None:
            return tried
    elif request.method == "POST":
        try:
            version = review_fixes.fix_manager_only(request.user, entry, chosen or 0)
        except review_fixes.NotFound:
            raise Http404("no such item") from None
        except ImportRejected as exc:
            messages.error(request, gettext("Not saved: %(problem)s") % {"problem": exc})
        else:
            messages.success(request, _saved(version.number))
            return redirect("review")
    return render(
        request,
        "inbox/settings/review_fix.html",
        {
            "entry": entry,
            "fix": "manager",
            "items": review_fixes.items_for(entry),
            "chosen": chosen,
            "read": {name for _sku, name in entry.items},
        },
    )


@login_required
@require_POST
def mark_fixed(request: HttpRequest) -> HttpResponse:
    """A flag fixed elsewhere (a rule line added on the assistant settings): resolved."""
    entry = _entry(request)
    fix = " ".join(request.POST.get("fix", "").split())[:200] or "fixed by hand"
    review_fixes.resolve(request.user, entry, fix)
    messages.success(request, gettext("Marked as fixed."))
    return redirect("review")
