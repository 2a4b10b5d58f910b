"""The follow-up ladder after an unanswered quote: due at its steps, sent as text inside the
window and as the channel's approved template outside it (skipped without one), never to a
customer who wrote, opted out, or whose chat a person has, nor outside working hours. The
Cloud API emulator receives what WhatsApp would."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from inbox.conversations import followups as core_followups
from inbox.conversations import ingest, lifecycle, opt_outs, ownership, status, window
from inbox.conversations.events import InboundEvent
from inbox.conversations.models import (
    Business,
    Channel,
    Chat,
    Followup,
    HandoffReason,
    Message,
    OptOut,
    Owner,
    Turn,
)
from inbox.upkeep import followups, tasks
from integrations.whatsapp import template_sync
from integrations.whatsapp.webhooks import routes
from tests import factories
from tests.emulators.graph_api import GraphApiEmulator

pytestmark = pytest.mark.django_db(transaction=True)

WABA = "102290129340398"
PNID = "106540352242777"
TOKEN = "tok-followups"
CUSTOMER = "77015550077"
QUOTE = "Oak table x2: 900 USD."


@pytest.fixture
def graph(settings: Any) -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        settings.WHATSAPP_GRAPH_URL = emulator.graph_url
        settings.WHATSAPP_APP_SECRET = "test-app-secret"
        routes.clear()
        emulator.register_number(PNID, TOKEN, waba_id=WABA)
        emulator.templates.add(
            WABA, "still_there", body="Hi {{1}}, do you still want the order? Reply to continue."
        )
        yield emulator


@pytest.fixture
def business() -> Business:
    return factories.business(followup_steps="2, 24", language="ru")


@pytest.fixture
def channel(graph: GraphApiEmulator, business: Business) -> Channel:
    return factories.channel(
        business, kind=Channel.Kind.CLOUD_API, phone_number_id=PNID, access_token=TOKEN,
        waba_id=WABA,
    )  # fmt: skip


def _quoted(channel: Channel, *, hours_ago: float, text: str = "Сколько стоят два дубовых стола?",
            lines: bool = True) -> tuple[Chat, Turn]:  # fmt: skip
    """A chat whose customer asked and the bot answered `hours_ago` with a priced quote."""
    quoted_at = timezone.now() - timedelta(hours=hours_ago)
    asked_at = quoted_at - timedelta(seconds=10)
    chat = factories.chat(
        channel, customer_key=CUSTOMER, customer_phone=CUSTOMER, customer_name="Aida",
        last_customer_at=asked_at, window_closes_at=asked_at + window.WINDOW,
    )  # fmt: skip
    asked = factories.customer_message(chat, text)
    quote = Message.objects.create(
        chat=chat, channel=channel, direction=Message.Direction.OUTBOUND,
        author=Message.Author.BOT, sent_by_bot=True, from_me=True, text=QUOTE,
        status=Message.Status.DELIVERED,
    )  # fmt: skip
    Message.objects.filter(pk=asked.pk).update(created_at=asked_at)
    Message.objects.filter(pk=quote.pk).update(created_at=quoted_at)
    explained = {"lines": [{"item": "Oak table", "qty": "2", "total": "900 USD"}]} if lines else {}
    turn = Turn.objects.create(
        chat=chat, first_message_id=asked.pk, last_message_id=asked.pk,
        generated_at_version=chat.version, outcome=Turn.Outcome.ANSWERED,
        decision={"action": "reply", "explained": explained}, reply_message=quote,
        finished_at=quoted_at + timedelta(seconds=1),
    )  # fmt: skip
    Chat.objects.filter(pk=chat.pk).update(answered_up_to=asked.pk)
    return chat, turn


def _verdict(turn: Turn, now: datetime | None = None) -> followups.Verdict:
    turn = Turn.objects.select_related("chat__channel__business", "reply_message").get(pk=turn.pk)
    return followups.eligible(turn, now or timezone.now())


def _customer_writes(chat: Chat, text: str = "А доставка?") -> None:
    ingest.accept(
        InboundEvent(
            channel_id=chat.channel_id, provider_message_id=f"wamid.fu{time.time_ns()}",
            chat_key=CUSTOMER, from_me=False, kind="text", text=text, media=None,
            provider_ts=int(time.time()),
        )
    )  # fmt: skip


class TestLadder:
    def test_the_steps_fall_due_at_their_hours_and_each_goes_once(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, turn = _quoted(channel, hours_ago=1)
        quoted_at = timezone.now() - timedelta(hours=1)

        assert _verdict(turn).reason == "not_due"
        assert _verdict(turn, quoted_at + timedelta(hours=2, minutes=1)).step == 1
        assert _verdict(turn, quoted_at + timedelta(hours=24, minutes=1)).step == 2

        earlier = timezone.now() - timedelta(hours=2, minutes=5)  # the quote, 2 h ago
        Message.objects.filter(pk=turn.reply_message_id).update(created_at=earlier)
        Turn.objects.filter(pk=turn.pk).update(finished_at=earlier)
        Chat.objects.filter(pk=chat.pk).update(last_customer_at=earlier - timedelta(seconds=9))
        assert tasks.send_followups() == 1
        assert tasks.send_followups() == 0  # the same step never twice

        assert [m.text for m in graph.sent_to(CUSTOMER)] == [followups.DEFAULT_TEXTS["ru"]]
        nudge = Followup.objects.get(chat=chat)
        assert (nudge.step, nudge.outcome, nudge.via) == (1, "sent", "text")
        assert nudge.message is not None
        assert nudge.message.sent_by_bot

    def test_the_second_step_follows_the_first_with_the_businesss_own_words(
        self, graph: GraphApiEmulator, channel: Channel, business: Business
    ) -> None:
        business.followup_texts = "Вы ещё думаете над заказом?\nПоследнее напоминание: стол ждёт."
        business.save()
        chat, _turn = _quoted(channel, hours_ago=2.1)
        Chat.objects.filter(pk=chat.pk).update(window_closes_at=timezone.now() + timedelta(days=2))
        assert followups.send_due(timezone.now()) == 1

        assert followups.send_due(timezone.now() + timedelta(hours=22)) == 1

        assert [m.text for m in graph.sent_to(CUSTOMER)] == [
            "Вы ещё думаете над заказом?", "Последнее напоминание: стол ждёт.",
        ]  # fmt: skip
        assert list(Followup.objects.values_list("step", flat=True).order_by("step")) == [1, 2]

    def test_a_reply_without_amounts_is_no_quote_and_is_not_followed_up(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        _chat, turn = _quoted(channel, hours_ago=3, lines=False)

        assert _verdict(turn).reason == "not_a_quote"
        assert followups.send_due(timezone.now()) == 0

    def test_off_by_default(
        self, graph: GraphApiEmulator, business: Business, channel: Channel
    ) -> None:
        Business.objects.filter(pk=business.pk).update(followup_steps="")
        _chat, turn = _quoted(channel, hours_ago=3)

        assert _verdict(turn).reason == "off"
        assert followups.send_due(timezone.now()) == 0
        assert graph.sent == []

    def test_the_nudge_is_in_the_customers_language(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, _turn = _quoted(channel, hours_ago=3, text="How much are two oak tables?")

        assert followups.send_due(timezone.now()) == 1
        assert graph.sent_to(CUSTOMER)[0].text == followups.DEFAULT_TEXTS["en"]
        assert followups.language_of(chat) == "en"


class TestStops:
    def test_a_customer_message_stops_the_ladder(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, turn = _quoted(channel, hours_ago=3)
        _customer_writes(chat)

        assert _verdict(turn).reason == "customer_wrote"
        assert followups.send_due(timezone.now()) == 0
        assert graph.sent == []

    def test_an_answer_to_the_first_nudge_ends_the_ladder(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, turn = _quoted(channel, hours_ago=2.1)
        assert followups.send_due(timezone.now()) == 1
        _customer_writes(chat, "Да, беру")

        assert _verdict(turn, timezone.now() + timedelta(hours=22)).reason == "customer_wrote"
        assert followups.send_due(timezone.now() + timedelta(hours=22)) == 0
        assert len(graph.sent_to(CUSTOMER)) == 1

    def test_a_person_taking_the_chat_after_the_first_nudge_ends_the_ladder(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, _turn = _quoted(channel, hours_ago=2.1)
        Chat.objects.filter(pk=chat.pk).update(window_closes_at=timezone.now() + timedelta(days=2))
        assert followups.send_due(timezone.now()) == 1
        ownership.take_over(chat.pk, manager=factories.manager(channel.business))

        assert followups.send_due(timezone.now() + timedelta(hours=22)) == 0
        assert len(graph.sent_to(CUSTOMER)) == 1

    def test_a_handed_off_chat_is_never_touched_even_back_with_the_bot(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, turn = _quoted(channel, hours_ago=3)
        ownership.request_human(chat.pk, reason=HandoffReason.ASKS_FOR_HUMAN)
        assert _verdict(turn).reason == "not_bot_owner"

        Chat.objects.filter(pk=chat.pk).update(owner=Owner.BOT)  # given back, no one wrote
        assert _verdict(turn).reason == "owner_changed"
        assert followups.send_due(timezone.now()) == 0
        assert graph.sent == []

    def test_a_resolved_or_snoozed_chat_gets_none(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, turn = _quoted(channel, hours_ago=3)
        lifecycle.resolve(chat.pk, manager=None)
        assert _verdict(turn).reason == "not_open"

        status.reopen(chat.pk, manager=None)
        assert _verdict(turn).reason == "status_changed"
        status.snooze(chat.pk, until=timezone.now() + timedelta(hours=1), manager=None)
        assert followups.send_due(timezone.now()) == 0
        assert graph.sent == []

    def test_an_opted_out_customer_is_never_nudged(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        _chat, turn = _quoted(channel, hours_ago=3)
        opt_outs.record(channel.business_id, CUSTOMER, OptOut.Source.MANAGER)

        assert _verdict(turn).reason == "opted_out"
        assert followups.send_due(timezone.now()) == 0
        assert graph.sent == []

    def test_a_chat_the_bot_left_silent_after_the_quote_is_not_nudged(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, turn = _quoted(channel, hours_ago=3)
        late = factories.customer_message(chat, "спасибо")  # the next turn wrote nothing
        Message.objects.filter(pk=late.pk).update(created_at=timezone.now() - timedelta(hours=2))

        assert _verdict(turn).reason == "not_last"
        assert followups.send_due(timezone.now()) == 0

    def test_outside_working_hours_the_step_waits_for_them(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        now = timezone.now()
        opening = now.replace(hour=0, minute=0, second=30, microsecond=0)
        days = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
        channel.working_hours = {day: [] for day in days}
        channel.working_hours[days[opening.weekday()]] = ["00:00", "00:01"]
        channel.save()
        hours_ago = (now - opening).total_seconds() / 3600 + 3
        _chat, turn = _quoted(channel, hours_ago=hours_ago)  # quoted 3 h before the opening

        verdict = _verdict(turn, opening + timedelta(hours=12))
        assert (verdict.step, verdict.reason, verdict.final) == (0, "outside_hours", False)
        assert _verdict(turn, opening).step == 1


class TestOutsideTheWindow:
    def test_the_channels_template_goes_when_the_window_closed(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        template_sync.sync(channel)
        channel.reengage_template_name, channel.reengage_template_language = "still_there", "en_US"
        channel.save()
        chat, _turn = _quoted(channel, hours_ago=24.5)

        assert followups.send_due(timezone.now()) == 1

        sent = graph.sent_to(CUSTOMER)
        assert [m.type for m in sent] == ["template"]
        nudge = Followup.objects.get(chat=chat)
        assert (nudge.step, nudge.via) == (2, "template")
        assert nudge.message is not None
        assert nudge.message.text == "Hi Aida, do you still want the order? Reply to continue."
        assert Chat.objects.get(pk=chat.pk).owner == Owner.BOT  # still the bot's chat

    def test_without_a_template_the_step_is_skipped_and_says_why(
        self, graph: GraphApiEmulator, channel: Channel
    ) -> None:
        chat, _turn = _quoted(channel, hours_ago=24.5)

        assert followups.send_due(timezone.now()) == 0
        assert followups.send_due(timezone.now()) == 0

        assert graph.sent == []
        nudge = Followup.objects.get(chat=chat)
        assert (nudge.outcome, nudge.reason) == ("skipped", "no_template")
        assert Chat.objects.get(pk=chat.pk).owner == Owner.BOT  # no handoff for a nudge


def test_steps_are_checked_on_the_way_in() -> None:
    assert followups.parse_steps("2, 24") == [2.0, 24.0]
    assert followups.parse_steps("") == []
    for bad in ("24, 2", "0.1", "two", "1, 2, 3, 4", "500"):
        with pytest.raises(ValueError):
            followups.parse_steps(bad)


def test_beat_runs_the_followups_every_five_minutes(settings: Any) -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["send-followups"]
    assert (entry["task"], entry["schedule"]) == ("inbox.send_followups", 300.0)
    assert tasks.send_followups.name == "inbox.send_followups"


def test_a_kazakh_customer_gets_the_kazakh_nudge(channel: Channel) -> None:
    chat, _turn = _quoted(channel, hours_ago=3, text="Екі үстел қанша тұрады?")

    assert followups.text_for(chat, 1) == followups.DEFAULT_TEXTS["kk"]


def test_an_opt_out_between_the_judgement_and_the_send_still_stops_it(
    graph: GraphApiEmulator, channel: Channel
) -> None:
    chat, turn = _quoted(channel, hours_ago=3)
    verdict = _verdict(turn)
    assert verdict.step == 1
    opt_outs.record(channel.business_id, CUSTOMER, OptOut.Source.KEYWORD)

    result = core_followups.send(
        core_followups.Step(
            chat_id=chat.pk, quote_message_id=turn.reply_message_id or 0, step=1, text="Hi?",
            version=Chat.objects.get(pk=chat.pk).version, last_message_id=turn.reply_message_id or 0,
        ),
        None,
        {},
    )  # fmt: skip

    assert result.reason == "opted_out"
    assert graph.sent == []
