"""One business's report over a period, as the page shows it and as the CSV export writes it.

The figures themselves, and the queries behind them, are `inbox.web.reports.figures`; this
module puts them together: `build` for the page (each source read once), `table` for one table
of the page as rows of text.
"""

from __future__ import annotations

from dataclasses import dataclass

from inbox.web.reports.figures import (
    Approvals,
    Followups,
    ManagerRow,
    Period,
    Questions,
    Summary,
    Waits,
    approvals,
    followups,
    handoffs,
    handoffs_by_day,
    handoffs_by_reason,
    managers,
    outside_knowledge_base,
    pending_waits,
    summary,
)


@dataclass(frozen=True)
class Report:
    period: Period
    summary: Summary
    reasons: list[tuple[str, int]]
    by_day: dict[str, list[int]]
    first_reply: Waits
    pending: Waits
    managers: list[ManagerRow]
    questions: Questions
    approvals: Approvals
    followups: Followups


def build(period: Period) -> Report:
    """The page: each source read once (the handoffs serve five of the figures)."""
    found = handoffs(period)
    return Report(
        period=period,
        summary=summary(period, found),
        reasons=found.by_reason(),
        by_day=found.by_day(),
        first_reply=found.first_reply(),
        pending=pending_waits(period),
        managers=managers(period, found),
        questions=outside_knowledge_base(period),
        approvals=approvals(period),
        followups=followups(period),
    )


# --- the tables, for the CSV export ------------------------------------------------------------


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def _approval_rows(found: Approvals) -> list[list[str]]:
    return [
        ["drafts_approved", str(found.approved)],
        ["drafts_edited", str(found.edited)],
        ["drafts_rejected", str(found.rejected)],
        ["drafts_expired", str(found.expired)],
        ["time_to_approve_p50_s", _seconds(found.time_to_approve.p50)],
    ]


def _followup_rows(found: Followups) -> list[list[str]]:
    return [
        ["followups_sent", str(found.sent)],
        ["followups_skipped", str(found.skipped)],
        ["followup_leads", str(found.leads)],
        ["followup_leads_answered", str(found.answered)],
        ["followup_answered_share", _share(found.answered_share)],
    ]


TABLES = ("summary", "reasons", "days", "managers", "questions")


def table(name: str, period: Period) -> list[list[str]]:
    """One table of the page as rows of text, header first (the CSV export)."""
    if name == "summary":
        found = handoffs(period)
        s, first, pending = summary(period, found), found.first_reply(), pending_waits(period)
        return [
            ["figure", "value"],
            ["conversations", str(s.conversations)],
            ["bot_only", str(s.bot_only)],
            ["bot_only_share", _share(s.bot_only_share)],
            ["handoffs", str(s.handoffs)],
            ["first_human_reply_p50_s", _seconds(first.p50)],
            ["first_human_reply_p90_s", _seconds(first.p90)],
            ["handoffs_unanswered", str(first.open)],
            ["pending_human_p50_s", _seconds(pending.p50)],
            ["pending_human_p90_s", _seconds(pending.p90)],
            ["pending_human_still_waiting", str(pending.open)],
            ["customer_messages", str(s.customer_messages)],
            ["voice_notes", str(s.voice_notes)],
            ["voice_share", _share(s.voice_share)],
            ["unclear_voice", str(s.unclear_voice)],
            ["unclear_voice_rate", _share(s.unclear_voice_rate)],
            ["guardrail_blocks", str(s.guardrail_blocks)],
            *_approval_rows(approvals(period)),
            *_followup_rows(followups(period)),
        ]
    if name == "reasons":
        return [["reason", "handoffs"]] + [[r, str(n)] for r, n in handoffs_by_reason(period)]
    if name == "days":
        series = handoffs_by_day(period)
        header = ["day", *series]
        return [header] + [
            [day.isoformat(), *(str(series[r][i]) for r in series)]
            for i, day in enumerate(period.days)
        ]
    if name == "managers":
        return [["manager", "first_responses", "first_response_p50_s", "chats", "messages"]] + [
            [
                m.name,
                str(m.first_responses),
                _seconds(m.first_response_p50),
                str(m.chats_handled),
                str(m.messages),
            ]
            for m in managers(period)
        ]
    if name == "questions":
        questions = outside_knowledge_base(period, limit=10_000)
        return [["at", "chat", "customer", "question", "outcome"]] + [
            [
                q.at.astimezone(period.zone).isoformat(),
                str(q.chat_id),
                q.customer,
                q.text,
                q.outcome,
            ]
            for q in questions.shown
        ]
    raise KeyError(name)
