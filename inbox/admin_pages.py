"""Settings pages for business admins (role `admin` of a business), not only the Django admin.

Each view limits itself to the businesses the user administers (`inbox.access`): a manager
gets 403, another business's channel is a 404.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from inbox import access, channel_settings, dashboard

REVIEW_REASONS = ("outside_knowledge_base", "guardrail")


def _require_admin(request: HttpRequest) -> None:
    if not access.is_any_business_admin(request.user):
        raise PermissionDenied("business admins only")


@login_required
@require_GET
def channels(request: HttpRequest) -> HttpResponse:
    _require_admin(request)
    rows = [
        (channel, channel_settings.health(channel))
        for channel in access.administered_channels(request.user)
        .select_related("business")
        .order_by("business__name", "name")
    ]
    return render(request, "inbox/settings/channels.html", {"rows": rows})


@login_required
@require_http_methods(["GET", "POST"])
def channel_edit(request: HttpRequest, channel_id: int) -> HttpResponse:
    _require_admin(request)
    channel = (
        access.administered_channels(request.user)
        .select_related("business")
        .filter(pk=channel_id)
        .first()
    )
    if channel is None:
        raise Http404("no such channel")
    form = channel_settings.ChannelSettingsForm(request.POST or None, instance=channel)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"Saved the settings of {channel.name}.")
        return redirect("settings_channels")
    return render(
        request,
        "inbox/settings/channel_edit.html",
        {"channel": channel, "form": form, "health": channel_settings.health(channel)},
    )


@login_required
@require_GET
def review(request: HttpRequest) -> HttpResponse:
    """Handoffs outside the price list and replies a guardrail blocked, newest first."""
    _require_admin(request)
    reason = request.GET.get("reason", "")
    reasons = (reason,) if reason in REVIEW_REASONS else REVIEW_REASONS
    page = Paginator(dashboard.review_handoffs(request.user, reasons), 50).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "inbox/settings/review.html",
        {"page": page, "reason": reason, "reasons": REVIEW_REASONS},
    )
