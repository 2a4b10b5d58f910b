"""The Bitrix24 sync settings page for business admins: connection, what syncs, pipeline and
stage mapping, and "test connection" (run by a worker, never in the request).

Secrets (webhook URL, application token, client secret) are write-only: the form
(setup/forms.py) says whether one is set and keeps it when the field is left empty.
"""

from __future__ import annotations

import time
from enum import StrEnum

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import get_language, gettext
from django.views.decorators.http import require_http_methods

from inbox.conversations import progress
from inbox.conversations.models import Job
from inbox.web.administered import administered_business
from inbox.web.elapsed import elapsed
from integrations.bitrix24 import tasks
from integrations.bitrix24.models import Bitrix24Settings
from integrations.bitrix24.setup import check, config
from integrations.bitrix24.setup.forms import APPS_HELP, WEBHOOKS_HELP, Bitrix24PageForm

# How long the live "test connection" result is waited for before the card says so.
TEST_WAIT_SECONDS = 120


class Action(StrEnum):
    """The page's buttons (`name="action"` in templates/inbox/settings/bitrix24.html)."""

    SAVE = "save"
    TEST = "test"
    RECONCILE = "reconcile"
    FULL_SYNC = "full_sync"


@login_required
@require_http_methods(["GET", "POST"])
def bitrix24_settings(request: HttpRequest) -> HttpResponse:
    page = administered_business(request)
    business, businesses = page.business, page.businesses
    current = Bitrix24Settings.objects.filter(business=business).first() or Bitrix24Settings(
        business=business, is_active=False
    )
    if request.method == "GET" and request.GET.get("fragment") == "status":
        return _status(request, current, business.pk)
    here = f"{request.path}?business={business.pk}"
    mode = _mode(request, current)
    if mode is None:  # nothing set up yet: which way to connect comes first
        return render(
            request,
            "inbox/settings/bitrix24_mode.html",
            {"business": business, "businesses": businesses, "here": here,
             "webhooks_help": WEBHOOKS_HELP, "apps_help": APPS_HELP},
        )  # fmt: skip
    form = Bitrix24PageForm(request.POST or None, instance=current, mode=mode)
    action = request.POST.get("action", Action.SAVE)
    if request.method == "POST" and action == Action.TEST and current.pk:
        asked = time.time()
        # The worker words its report in the language of the admin who asked.
        tasks.test_connection_task.delay(business.pk, get_language() or "")
        if getattr(request, "htmx", False):
            return _status(request, current, business.pk, asked=asked)
        messages.info(
            request, gettext("Testing the connection… the result appears below in a moment.")
        )
        return redirect(here)
    if request.method == "POST" and action == Action.RECONCILE and current.pk:
        tasks.reconcile_task.delay(business.pk)
        messages.success(
            request, gettext("A reconciliation pass is queued; its progress shows below.")
        )
        return redirect(here)
    if request.method == "POST" and action == Action.FULL_SYNC and current.pk:
        count = config.request_full_sync(business.pk)
        messages.success(
            request, gettext("A checking sync of %(count)s chats is queued.") % {"count": count}
        )
        return redirect(here)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():  # a refused option leaves nothing half-saved
                config.configure(business, **form.options())
        except config.ConfigError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                gettext("Saved the Bitrix24 settings of %(name)s.") % {"name": business.name},
            )
            return redirect(here)
    return render(
        request,
        "inbox/settings/bitrix24.html",
        {
            "form": form,
            "mode": mode,
            "modes": Bitrix24Settings.Mode,
            "here": here,
            "webhooks_help": WEBHOOKS_HELP,
            "apps_help": APPS_HELP,
            "business": business,
            "businesses": businesses,
            "configured": bool(current.pk),
            "report": check.last_report(business.pk) if current.pk else None,
            "checked_ago": elapsed(current.last_check_at) if current.last_check_at else "",
            "summary": config.describe(current) if current.pk else [],
            "full_sync_job": progress.latest([business.pk], Job.Kind.CRM_FULL_SYNC),
            "reconcile_job": progress.latest([business.pk], Job.Kind.CRM_RECONCILE),
        },
    )


def _mode(request: HttpRequest, current: Bitrix24Settings) -> str | None:
    """The connection mode the form is for: one the admin picked (`?mode=`, or the form's own
    field), else the stored one; None while nothing is stored and none was picked."""
    picked = request.POST.get("mode") or request.GET.get("mode") or ""
    if picked in Bitrix24Settings.Mode.values:
        return picked
    return current.mode if current.pk else None


def _status(
    request: HttpRequest, current: Bitrix24Settings, business_id: int, asked: float | None = None
) -> HttpResponse:
    """The connection card alone, for htmx: while a test asked at `asked` (epoch seconds) has
    no newer result, it polls itself every second, for at most TEST_WAIT_SECONDS."""
    if asked is None:
        try:
            asked = float(request.GET.get("asked", ""))
        except ValueError:
            asked = None
    checked_at = (
        Bitrix24Settings.objects.filter(business_id=business_id)
        .values_list("last_check_at", flat=True)
        .first()
    )
    waiting = asked is not None and (checked_at is None or checked_at.timestamp() < asked)
    return render(
        request,
        "inbox/settings/_bitrix24_status.html",
        {
            "business_id": business_id,
            "report": check.last_report(business_id) if current.pk else None,
            "checked_ago": elapsed(checked_at) if checked_at else "",
            "testing": waiting and time.time() - (asked or 0) < TEST_WAIT_SECONDS,
            "no_answer": waiting and time.time() - (asked or 0) >= TEST_WAIT_SECONDS,
            "asked": asked,
        },
    )
