"""The manager's own notification settings: which desktop notifications they want, per business.

Any member (not only admins) edits their own memberships here; nobody else's."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from inbox.conversations import access
from inbox.web.live.notify import FIELDS, LABELS


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request: HttpRequest) -> HttpResponse:
    """A checkbox per kind and business; a POST sets every checkbox of the page (an unticked
    box is absent from the form, so it turns that kind off)."""
    memberships = list(access.memberships(request.user).select_related("business"))
    memberships.sort(key=lambda m: m.business.name)
    if request.method == "POST":
        for membership in memberships:
            for kind, field in FIELDS.items():
                setattr(membership, field, request.POST.get(f"{membership.pk}-{kind}") == "on")
            membership.save(update_fields=list(FIELDS.values()))
        messages.success(request, "Notification settings saved.")
        return redirect("settings_notifications")
    rows = [
        {
            "membership": m,
            "kinds": [(kind, LABELS[kind], getattr(m, field)) for kind, field in FIELDS.items()],
        }
        for m in memberships
    ]
    return render(request, "inbox/settings/notifications.html", {"rows": rows})
