"""The manager's own settings, per business: the name that business's team and customers see
(`team.set_display_name`), the inbox's language (`Membership.ui_language`, blank = the
business's default; inbox/web/local_language.py) and which desktop notifications they want.

Any member (not only admins) edits their own memberships here; nobody else's."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods

from inbox.conversations import access, names, team
from inbox.conversations.models import Membership
from inbox.web import local_language
from inbox.web.live.notify import FIELDS, LABELS


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request: HttpRequest) -> HttpResponse:
    """A checkbox per kind and business; a POST sets every checkbox of the page (an unticked
    box is absent from the form, so it turns that kind off)."""
    memberships = list(access.memberships(request.user).select_related("business", "user"))
    memberships.sort(key=lambda m: m.business.name)
    if request.method == "POST":
        for membership in memberships:
            for kind, field in FIELDS.items():
                setattr(membership, field, request.POST.get(f"{membership.pk}-{kind}") == "on")
            membership.ui_language = _chosen_language(request, membership)
            membership.save(update_fields=[*FIELDS.values(), "ui_language"])
            _save_name(request, membership)
        # Said in the language the next page is shown in, which this form may have changed.
        with translation.override(local_language.language_of(request.user)):
            messages.success(request, gettext("Settings saved."))
        return redirect("settings_notifications")
    rows = [
        {
            "membership": m,
            "default_name": names.default_name(m.user),
            "kinds": [
                (kind, gettext(LABELS[kind]), getattr(m, field)) for kind, field in FIELDS.items()
            ],
            "business_language": dict(settings.LANGUAGES)[m.business.ui_language],
        }
        for m in memberships
    ]
    context = {"rows": rows, "languages": settings.LANGUAGES}
    return render(request, "inbox/settings/notifications.html", context)


def _chosen_language(request: HttpRequest, membership: Membership) -> str:
    """The language the form chose for one business ("" = the business's default); an
    unknown code (or a form without the field) keeps the member's choice."""
    chosen = request.POST.get(f"{membership.pk}-ui_language")
    if chosen is None or (chosen and chosen not in local_language.CODES):
        return membership.ui_language
    return chosen


def _save_name(request: HttpRequest, membership: Membership) -> None:
    """The name field of one business, when the form had it."""
    field = f"{membership.pk}-display_name"
    if field not in request.POST or request.POST[field].strip() == membership.display_name:
        return
    try:
        team.set_display_name(membership, request.POST[field])
    except team.TeamError as exc:
        messages.error(request, f"{membership.business.name}: {exc}.")
