"""The reports page and its CSV exports, for business admins only (`report.py`, `figures.py`).

A manager gets 403; another business, or another business's channel, is a 404.
"""

from __future__ import annotations

import csv

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext
from django.views.decorators.http import require_GET

from inbox.conversations.models import Business, Channel, HandoffReason
from inbox.web.administered import administered_business
from inbox.web.params import day_param, parse_id
from inbox.web.reports import charts, figures, report

# A cell a spreadsheet would read as a formula is written as text.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _period(request: HttpRequest) -> tuple[figures.Period, list[Business]]:
    page = administered_business(request)
    business = page.business
    channel: Channel | None = None
    if request.GET.get("channel"):
        channel_id = parse_id(request.GET["channel"])
        channel = business.channels.filter(pk=channel_id).first() if channel_id else None
        if channel is None:
            raise Http404("no such channel")
    period = figures.period_for(
        business, day_param(request.GET, "from"), day_param(request.GET, "to"), channel
    )
    return period, page.businesses


@login_required
@require_GET
def report_page(request: HttpRequest) -> HttpResponse:
    period, businesses = _period(request)
    built = report.build(period)
    days = [d.isoformat() for d in period.days]
    query = request.GET.urlencode()
    return render(
        request,
        "inbox/reports/page.html",
        {
            "report": built,
            "period": period,
            "businesses": businesses,
            "channels": period.business.channels.order_by("name"),
            "channel_id": period.channel_ids[0] if request.GET.get("channel") else None,
            "reasons_chart": charts.bar_chart(
                [(HandoffReason.label_for(r), n) for r, n in built.reasons],
                label=gettext("Handoffs by reason"),
            ),
            "days_chart": charts.line_chart(
                days,
                {HandoffReason.label_for(r): counts for r, counts in built.by_day.items()},
                label=gettext("Handoffs per day, one line per reason"),
            ),
            "day_rows": [
                (day, [values[i] for values in built.by_day.values()]) for i, day in enumerate(days)
            ],
            "query": query,
            "tables": report.TABLES,
        },
    )


def _cell(value: str) -> str:
    return "'" + value if value.startswith(FORMULA_START) else value


@login_required
@require_GET
def report_csv(request: HttpRequest) -> HttpResponse:
    """`?table=summary|reasons|days|managers|questions` with the page's own parameters."""
    table = request.GET.get("table", "summary")
    if table not in report.TABLES:
        raise Http404("no such table")
    period, _ = _period(request)
    name = f"{table}-{period.first_day.isoformat()}-{period.last_day.isoformat()}.csv"
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    writer = csv.writer(response)
    for row in report.table(table, period):
        writer.writerow([_cell(value) for value in row])
    return response
