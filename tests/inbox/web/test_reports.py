"""The reports page against a seeded history whose every figure is known (inbox/web/reports/figures.py).

The business is in Europe/Moscow (UTC+3): a message at 01:00 local on the first day is 22:00 UTC
the day before, and counts; the range is 2026-11-02 .. 2026-11-04, local days.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import Client

from inbox.conversations.models import (
    Business,
    Channel,
    Chat,
    ChatTransition,
    Handoff,
    Membership,
    Message,
    Owner,
    Turn,
)
from tests import factories

pytestmark = pytest.mark.django_db
MSK = ZoneInfo("Europe/Moscow")
RANGE = {"from": "2026-11-02", "to": "2026-11-04"}


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=MSK)


def said(chat: Chat, when: datetime, author: str = "customer", **kwargs: Any) -> Message:
    direction = Message.Direction.INBOUND if author == "customer" else Message.Direction.OUTBOUND
    message = Message.objects.create(
        chat=chat, channel=chat.channel, direction=direction, author=author, **kwargs
    )
    Message.objects.filter(pk=message.pk).update(created_at=when)
    return message


def moved(chat: Chat, when: datetime, from_owner: str, to_owner: str, cause: str) -> None:
    row = ChatTransition.objects.create(
        chat=chat, from_owner=from_owner, to_owner=to_owner, cause=cause, version=1
    )
    ChatTransition.objects.filter(pk=row.pk).update(at=when)


def handed_off(chat: Chat, when: datetime, reason: str) -> None:
    row = Handoff.objects.create(chat=chat, reason=reason)
    Handoff.objects.filter(pk=row.pk).update(created_at=when)
    moved(chat, when, Owner.BOT, Owner.PENDING_HUMAN, "request_human")


@pytest.fixture
def history() -> dict[str, Any]:
    business = factories.business("Oak", timezone="Europe/Moscow")
    bridge = Channel.Kind.BRIDGE
    shop = factories.channel(business, kind=bridge, name="Shop")
    web = factories.channel(business, kind=bridge, name="Web")
    admin = factories.manager(business, "admin", role=Membership.Role.ADMIN)
    anna, boris = factories.manager(business, "anna"), factories.manager(business, "boris")
    bot = Message.Author.BOT

    c1 = factories.chat(shop)  # the bot alone, one clear voice note
    said(c1, at(2, 10), text="price of the oak table?")
    said(c1, at(2, 10, 1), kind="voice", transcript="and chairs", transcript_confidence=0.9)
    said(c1, at(2, 10, 2), bot, text="12 000")

    c2 = factories.chat(shop)  # handed off, anna answers after 10 min
    said(c2, at(2, 12), text="I want a person")
    handed_off(c2, at(2, 12, 1), "asks_for_human")
    said(c2, at(2, 12, 11), Message.Author.MANAGER, sent_by=anna, text="Hello, Anna here")
    moved(c2, at(2, 12, 11), Owner.PENDING_HUMAN, Owner.HUMAN, "manager_replied")

    c3 = factories.chat(shop)  # unclear voice; boris takes it after 15 min, answers after 30
    said(c3, at(3, 9), kind="voice", transcript="mmm", transcript_confidence=0.3)
    handed_off(c3, at(3, 9, 5), "voice_unclear")
    moved(c3, at(3, 9, 20), Owner.PENDING_HUMAN, Owner.HUMAN, "take_over")
    said(c3, at(3, 9, 35), Message.Author.MANAGER, sent_by=boris, text="Could you write it?")

    c4 = factories.chat(web)  # 01:00 Moscow on the 4th is the 3rd in UTC; nobody answers yet
    said(c4, at(4, 1), text="50% off?")
    handed_off(c4, at(4, 1), "guardrail")

    c5 = factories.chat(web)  # outside the knowledge base; a manager answers from the phone
    question = said(c5, at(4, 10), text="Do you sell swing chairs?")
    said(c5, at(4, 10, 1), bot, text="Which one do you mean?")
    turn = Turn.objects.create(
        chat=c5,
        first_message_id=question.pk,
        last_message_id=question.pk,
        generated_at_version=1,
        outcome=Turn.Outcome.CLARIFIED,
        reason="outside_knowledge_base",
    )
    Turn.objects.filter(pk=turn.pk).update(started_at=at(4, 10))
    said(c5, at(4, 10, 30), Message.Author.PHONE, text="Yes, from spring")
    moved(c5, at(4, 10, 30), Owner.BOT, Owner.HUMAN, "manager_replied")

    c6 = factories.chat(shop)  # only outside the range, on both sides
    said(c6, at(1, 23, 59), text="too early")
    said(c6, at(5, 0), text="too late")
    handed_off(c6, at(5, 0), "asks_for_human")

    c7 = factories.chat(shop)  # 01:00 local on the 2nd (22:00 UTC on the 1st); voice unreadable
    said(c7, at(2, 1), kind="voice", transcript_status=Message.TranscriptStatus.FAILED)

    other = factories.business("Elm", timezone="Europe/Moscow")
    other_channel = factories.channel(other, kind=bridge, name="Elm shop")
    other_admin = factories.manager(other, "elm_admin", role=Membership.Role.ADMIN)
    x = factories.chat(other_channel, customer_name="Elm customer")
    said(x, at(3, 12), text="Elm secret question")
    handed_off(x, at(3, 12), "complaint")
    sandbox = factories.channel(business, name="Sandbox")  # the team trying the assistant
    tried = factories.chat(sandbox, customer_name="Admin trying")
    said(tried, at(3, 11), text="I want a person")
    handed_off(tried, at(3, 11), "asks_for_human")
    return {
        "business": business,
        "sandbox": sandbox,
        "shop": shop,
        "web": web,
        "admin": admin,
        "anna": anna,
        "other": other,
        "other_channel": other_channel,
        "other_admin": other_admin,
    }


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page(history: dict[str, Any], **params: Any) -> Any:
    response = client_for(history["admin"]).get("/inbox/reports/", {**RANGE, **params})
    assert response.status_code == 200
    return response


def test_every_figure_of_the_seeded_history(history) -> None:
    response = page(history)
    report = response.context["report"]
    s = report.summary
    assert (s.conversations, s.bot_only) == (6, 2)
    assert (s.customer_messages, s.voice_notes, s.unclear_voice) == (7, 3, 2)
    assert (s.handoffs, s.guardrail_blocks) == (3, 1)
    assert report.reasons == [("asks_for_human", 1), ("guardrail", 1), ("voice_unclear", 1)]
    assert report.by_day == {
        "asks_for_human": [1, 0, 0],
        "guardrail": [0, 0, 1],
        "voice_unclear": [0, 1, 0],
    }
    # First human reply: 600 s and 1800 s; p90 interpolates (percentile_cont).
    first = report.first_reply
    assert (first.measured, first.open) == (2, 1)
    assert first.p50 == pytest.approx(1200)
    assert first.p90 == pytest.approx(1680)
    # Waiting in PENDING_HUMAN: 600 s (c2) and 900 s (c3, taken over); c4 still waits.
    pending = report.pending
    assert (pending.measured, pending.open) == (2, 1)
    assert pending.p50 == pytest.approx(750)
    assert pending.p90 == pytest.approx(870)
    rows = {m.name: m for m in report.managers}
    assert [m.name for m in report.managers] == ["anna", "boris", "From the phone"]
    assert (rows["anna"].first_responses, rows["anna"].first_response_p50) == (1, 600)
    assert (rows["boris"].first_responses, rows["boris"].first_response_p50) == (1, 1800)
    assert (rows["From the phone"].first_responses, rows["From the phone"].chats_handled) == (0, 1)
    assert all((m.chats_handled, m.messages) == (1, 1) for m in report.managers)
    assert report.questions.total == 1
    assert [q.text for q in report.questions.shown] == ["Do you sell swing chairs?"]

    html = response.content.decode()
    assert "33.3%" in html  # bot-only share
    assert "42.9%" in html
    assert "66.7%" in html
    assert "20 min 00 s" in html
    assert "28 min 00 s" in html
    assert "<svg" in html
    # The charts name each reason as the page's tables do (HandoffReason's label), not by code.
    assert "<title>Customer asked for a person: 1</title>" in html
    assert "<title>asks_for_human: 1</title>" not in html
    assert "rule=Do%20you%20sell%20swing%20chairs%3F" in html
    assert "Elm" not in html


def test_a_channel_filter_keeps_only_that_channel(history) -> None:
    report = page(history, channel=history["web"].pk).context["report"]
    assert (report.summary.conversations, report.summary.bot_only) == (2, 0)
    assert report.reasons == [("guardrail", 1)]
    assert report.first_reply.measured == 0
    assert report.first_reply.p50 is None
    assert [m.name for m in report.managers] == ["From the phone"]


def test_sandbox_chats_are_counted_only_when_the_sandbox_is_picked(history) -> None:
    everything = page(history).context["report"]
    assert everything.summary.conversations == 6
    assert ("asks_for_human", 1) in everything.reasons

    tried = page(history, channel=history["sandbox"].pk).context["report"]
    assert (tried.summary.conversations, tried.summary.handoffs) == (1, 1)


def test_days_are_the_business_days_not_utc(history) -> None:
    Business.objects.filter(pk=history["business"].pk).update(timezone="UTC")
    report = page(history).context["report"]
    # In UTC c7 (22:00 on the 1st) falls out, c6 (21:00 on the 4th) comes in, and c4's
    # handoff moves to the 3rd.
    assert (report.summary.voice_notes, report.summary.handoffs, report.summary.bot_only) == (
        2,
        4,
        1,
    )
    assert report.by_day["guardrail"] == [0, 1, 0]


def csv_rows(client: Client, table: str, **params: Any) -> list[list[str]]:
    response = client.get("/inbox/reports/export.csv", {**RANGE, "table": table, **params})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_each_table_exports_as_csv(history) -> None:
    client = client_for(history["admin"])
    summary = dict(csv_rows(client, "summary")[1:])
    assert summary["conversations"] == "6"
    assert summary["bot_only_share"] == "0.3333"
    assert summary["first_human_reply_p90_s"] == "1680"
    assert summary["pending_human_p50_s"] == "750"
    assert summary["unclear_voice_rate"] == "0.6667"
    assert summary["guardrail_blocks"] == "1"
    assert csv_rows(client, "reasons") == [
        ["reason", "handoffs"],
        ["asks_for_human", "1"],
        ["guardrail", "1"],
        ["voice_unclear", "1"],
    ]
    assert csv_rows(client, "days") == [
        ["day", "asks_for_human", "guardrail", "voice_unclear"],
        ["2026-11-02", "1", "0", "0"],
        ["2026-11-03", "0", "0", "1"],
        ["2026-11-04", "0", "1", "0"],
    ]
    assert csv_rows(client, "managers")[1:] == [
        ["anna", "1", "600", "1", "1"],
        ["boris", "1", "1800", "1", "1"],
        ["From the phone", "0", "", "1", "1"],
    ]
    questions = csv_rows(client, "questions")
    assert questions[1][0] == "2026-11-04T10:00:00+03:00"
    assert questions[1][3:] == ["Do you sell swing chairs?", "Asked to clarify"]


def test_a_formula_in_customer_text_is_exported_as_text(history) -> None:
    Message.objects.filter(text="Do you sell swing chairs?").update(text="=HYPERLINK(1)")
    rows = csv_rows(client_for(history["admin"]), "questions")
    assert rows[1][3] == "'=HYPERLINK(1)"


def test_add_a_rule_opens_the_assistant_settings_with_the_question(history) -> None:
    client = client_for(history["admin"])
    business = history["business"]
    response = client.get(
        "/inbox/settings/assistant/", {"business": business.pk, "rule": "Swing chairs?"}
    )
    assert response.status_code == 200
    assert "Q: Swing chairs?\nA: " in response.content.decode()


# --- isolation -------------------------------------------------------------------------------


def test_a_manager_cannot_open_the_reports(history) -> None:
    client = client_for(history["anna"])
    assert client.get("/inbox/reports/", RANGE).status_code == 403
    assert client.get("/inbox/reports/export.csv", RANGE).status_code == 403


def test_an_admin_of_another_business_sees_only_their_own(history) -> None:
    client = client_for(history["other_admin"])
    own = client.get("/inbox/reports/", RANGE)
    assert own.status_code == 200
    assert own.context["report"].summary.conversations == 1
    assert own.context["report"].reasons == [("complaint", 1)]
    html = own.content.decode()
    assert "Oak" not in html
    assert "swing" not in html
    assert "anna" not in html
    oak = history["business"].pk
    assert client.get("/inbox/reports/", {**RANGE, "business": oak}).status_code == 404
    assert client.get("/inbox/reports/export.csv", {**RANGE, "business": oak}).status_code == 404
    shop = history["shop"].pk
    assert client.get("/inbox/reports/", {**RANGE, "channel": shop}).status_code == 404
    assert client.get("/inbox/reports/export.csv", {**RANGE, "channel": shop}).status_code == 404
    assert (
        "anna"
        not in client.get(
            "/inbox/reports/export.csv", {**RANGE, "table": "managers"}
        ).content.decode()
    )


def test_anonymous_is_sent_to_log_in(history) -> None:
    assert Client().get("/inbox/reports/").status_code == 302
    assert Client().get("/inbox/reports/export.csv").status_code == 302


def test_an_unknown_table_is_a_404(history) -> None:
    assert (
        client_for(history["admin"])
        .get("/inbox/reports/export.csv", {"table": "secrets"})
        .status_code
        == 404
    )


def test_the_default_range_is_the_last_30_local_days(history) -> None:
    period = page(history, **{"from": "", "to": ""}).context["period"]
    assert (period.last_day - period.first_day) == timedelta(days=29)


def test_the_page_reads_each_source_once(history, django_assert_max_num_queries) -> None:
    """The page stays fast on a large history: the handoffs are read once for the counts, the
    reasons, the days and the first replies (they were five queries), the customers' messages
    in one pass (migration 0012_reports_speed, bench/reports_bench.py)."""
    client = client_for(history["admin"])
    # Warm-up; 22 queries then, 11 of them the figures (one the follow-ups), 2 the menu's count
    # of drafts to approve, 1 the member's language.
    client.get("/inbox/reports/", RANGE)
    with django_assert_max_num_queries(22) as captured:
        response = client.get("/inbox/reports/", RANGE)
    assert response.context["report"].summary.handoffs == 3
    handoff_reads = [q for q in captured.captured_queries if '"inbox_handoff"' in q["sql"]]
    assert len(handoff_reads) == 1


@pytest.mark.parametrize("day", ["9999-12-31", "0001-01-01", "２０２６-11-02", "2026-02-30"])
@pytest.mark.parametrize("url", ["/inbox/reports/", "/inbox/reports/export.csv"])
def test_a_date_outside_the_supported_years_is_a_400(history, url: str, day: str) -> None:
    client = Client(raise_request_exception=False)
    client.force_login(history["admin"])
    assert client.get(url, {"from": day}).status_code == 400
    assert client.get(url, {**RANGE, "to": day}).status_code == 400
