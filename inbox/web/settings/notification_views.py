"""The manager's own settings, per business: the name that business's team and customers see
(`team.set_display_name`) and which desktop notifications they want.

Any member (not only admins) edits their own memberships here; nobody else's."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from inbox.conversations import access, names, team
from inbox.conversations.models import Membership
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
            membership.save(update_fields=list(FIELDS.values()))
            _save_name(request, membership)
        messages.success(request, "Settings saved.")
        return redirect("settings_notifications")
    rows = [
        {
            "membership": m,
            "default_name": names.default_name(m.user),
            "kinds": [(kind, LABELS[kind], getattr(m, field)) for kind, field in FIELDS.items()],
        }
        for m in memberships
    ]
    return render(request, "inbox/settings/notifications.html", {"rows": rows})


def _save_name(request: HttpRequest, membership: Membership) -> None:
    """The name field of one business, when the form had it."""
    field = f"{membership.pk}-display_name"
    if field not in request.POST or request.POST[field].strip() == membership.display_name:
        return
    try:
        team.set_display_name(membership, request.POST[field])
    except team.TeamError as exc:
        messages.error(request, f"{membership.business.name}: {exc}.")
