"""The Bitrix24 sync settings page for business admins: connection, what syncs, pipeline and
stage mapping, and "test connection" (run by a worker, never in the request).

Secrets (webhook URL, application token, client secret) are write-only: the form
(setup/forms.py) says whether one is set and keeps it when the field is left empty.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from inbox.conversations import access
from integrations.bitrix24 import tasks
from integrations.bitrix24.models import Bitrix24Settings
from integrations.bitrix24.setup import check, config
from integrations.bitrix24.setup.forms import Bitrix24SettingsForm


@login_required
@require_http_methods(["GET", "POST"])
def bitrix24_settings(request: HttpRequest) -> HttpResponse:
    businesses = list(access.administered_businesses(request.user))
    if not businesses:
        raise PermissionDenied("business admins only")
    raw = request.GET.get("business", "")
    business = next((b for b in businesses if str(b.pk) == raw), businesses[0])
    current = Bitrix24Settings.objects.filter(business=business).first() or Bitrix24Settings(
        business=business, is_active=False
    )
    form = Bitrix24SettingsForm(request.POST or None, instance=current)
    here = f"{request.path}?business={business.pk}"
    action = request.POST.get("action", "save")
    if request.method == "POST" and action == "test" and current.pk:
        tasks.test_connection_task.delay(business.pk)
        messages.info(request, "Testing the connection… the result appears below in a moment.")
        return redirect(here)
    if request.method == "POST" and action == "full_sync" and current.pk:
        count = config.request_full_sync(business.pk)
        messages.success(request, f"A checking sync of {count} chats is queued.")
        return redirect(here)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():  # a refused option leaves nothing half-saved
                config.configure(business, **form.options())
        except config.ConfigError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Saved the Bitrix24 settings of {business.name}.")
            return redirect(here)
    return render(
        request,
        "inbox/settings/bitrix24.html",
        {
            "form": form,
            "business": business,
            "businesses": businesses,
            "configured": bool(current.pk),
            "report": check.last_report(business.pk) if current.pk else None,
            "checked_at": current.last_check_at,
            "summary": config.describe(current) if current.pk else [],
        },
    )
