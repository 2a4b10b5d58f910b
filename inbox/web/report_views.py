"""The reports page and its CSV exports, for business admins only (`inbox/web/reports.py`).

A manager gets 403; another business, or another business's channel, is a 404.
"""

from __future__ import annotations

import csv
from datetime import date
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from inbox.conversations import access
from inbox.conversations.models import Channel
from inbox.web import charts, reports

# A cell a spreadsheet would read as a formula is written as text.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _day(raw: str) -> date | None:
    try:
        return date.fromisoformat(raw) if raw else None
    except ValueError:
        return None


def _period(request: HttpRequest) -> tuple[reports.Period, list[Any]]:
    if not access.is_any_business_admin(request.user):
        raise PermissionDenied("business admins only")
    businesses = list(access.administered_businesses(request.user).order_by("name"))
    raw = request.GET.get("business", "")
    business = next((b for b in businesses if str(b.pk) == raw), None)
    if business is None and raw:
        raise Http404("no such business")
    business = business or businesses[0]
    channel: Channel | None = None
    raw_channel = request.GET.get("channel", "")
    if raw_channel:
        channel = (
            business.channels.filter(pk=int(raw_channel)).first() if raw_channel.isdigit() else None
        )
        if channel is None:
            raise Http404("no such channel")
    period = reports.period_for(
        business, _day(request.GET.get("from", "")), _day(request.GET.get("to", "")), channel
    )
    return period, businesses


@login_required
@require_GET
def report_page(request: HttpRequest) -> HttpResponse:
    period, businesses = _period(request)
    report = reports.build(period)
    days = [d.isoformat() for d in period.days]
    query = request.GET.urlencode()
    return render(
        request,
        "inbox/reports/page.html",
        {
            "report": report,
            "period": period,
            "businesses": businesses,
            "channels": period.business.channels.order_by("name"),
            "channel_id": period.channel_ids[0] if request.GET.get("channel") else None,
            "reasons_chart": charts.bar_chart(report.reasons, label="Handoffs by reason"),
            "days_chart": charts.line_chart(
                days, report.by_day, label="Handoffs per day, one line per reason"
            ),
            "day_rows": [
                (day, [values[i] for values in report.by_day.values()])
                for i, day in enumerate(days)
            ],
            "query": query,
            "tables": reports.TABLES,
        },
    )


def _cell(value: str) -> str:
    return "'" + value if value.startswith(FORMULA_START) else value


@login_required
@require_GET
def report_csv(request: HttpRequest) -> HttpResponse:
    """`?table=summary|reasons|days|managers|questions` with the page's own parameters."""
    table = request.GET.get("table", "summary")
    if table not in reports.TABLES:
        raise Http404("no such table")
    period, _ = _period(request)
    name = f"{table}-{period.first_day.isoformat()}-{period.last_day.isoformat()}.csv"
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    writer = csv.writer(response)
    for row in reports.table(table, period):
        writer.writerow([_cell(value) for value in row])
    return response
