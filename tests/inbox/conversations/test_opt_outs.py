"""The opt-out register: WhatsApp's "stopped marketing messages" failure (131050) puts the
customer on it, as read from the webhook body the platform sends; `opted_out` / `refusal` are
what a proactive send asks; a manager's clearing is kept with who did it; one business's
register says nothing about another's customers."""

from __future__ import annotations

import pytest

from inbox.conversations import ingest, opt_outs
from inbox.conversations.models import Channel, Message, OptOut
from integrations.whatsapp import cloud_events
from tests import factories
from tests.emulators.graph_api import envelope, status_update

pytestmark = pytest.mark.django_db

CUSTOMER = "77011234567"


def _sent_to_customer(channel: Channel, wamid: str) -> Message:
    chat = factories.chat(channel, customer_key=CUSTOMER, customer_phone=CUSTOMER)
    return Message.objects.create(chat=chat, channel=channel, direction="out", author="bot",
                                  from_me=True, sent_by_bot=True, text="Our new prices",
                                  provider_message_id=wamid, status="sent")  # fmt: skip


def _webhook(channel: Channel, *statuses: dict[str, object]) -> None:
    """The platform's status webhook, read by the real parser and stored by the ingest."""
    body = envelope(channel.phone_number_id, statuses=list(statuses))
    for event in cloud_events.normalise(body, {channel.phone_number_id: channel.pk}).events:
        ingest.accept(event)


@pytest.fixture
def channel() -> Channel:
    return factories.channel(kind=Channel.Kind.CLOUD_API)


def test_a_131050_failure_puts_the_customer_on_the_register(channel: Channel) -> None:
    message = _sent_to_customer(channel, "wamid.promo1")

    _webhook(channel, status_update("wamid.promo1", "failed", CUSTOMER, error_code=131050))

    message.refresh_from_db()
    assert (message.status, message.error_code) == ("failed", "131050")
    assert opt_outs.opted_out(channel.business, CUSTOMER)
    refusal = opt_outs.refusal(channel.business, CUSTOMER)
    assert refusal is not None
    assert "opted out" in refusal.reason
    assert OptOut.objects.get().source == OptOut.Source.PLATFORM


def test_a_131050_failure_before_the_send_was_recorded_still_counts(channel: Channel) -> None:
    factories.chat(channel, customer_key=CUSTOMER)

    _webhook(channel, status_update("wamid.unknown", "failed", CUSTOMER, error_code=131050))

    assert opt_outs.opted_out(channel.business_id, CUSTOMER)


def test_other_failures_and_redelivered_statuses_leave_one_row_or_none(channel: Channel) -> None:
    _sent_to_customer(channel, "wamid.a")
    _webhook(channel, status_update("wamid.a", "failed", CUSTOMER, error_code=131047))
    assert not opt_outs.opted_out(channel.business, CUSTOMER)

    stop = status_update("wamid.a", "failed", CUSTOMER, error_code=131050)
    _webhook(channel, stop)
    _webhook(channel, stop)

    assert OptOut.objects.count() == 1


def test_clearing_keeps_the_row_with_who_cleared_it_and_a_new_opt_out_starts_afresh() -> None:
    business = factories.business()
    admin = factories.manager(business)
    assert opt_outs.record(business.pk, CUSTOMER, OptOut.Source.KEYWORD)
    assert not opt_outs.record(business.pk, CUSTOMER, OptOut.Source.PLATFORM)

    assert opt_outs.clear(business.pk, CUSTOMER, admin)
    assert not opt_outs.clear(business.pk, CUSTOMER, admin)

    assert not opt_outs.opted_out(business, CUSTOMER)
    row = OptOut.objects.get()
    assert row.cleared_by == admin
    assert row.cleared_at is not None
    assert opt_outs.record(business.pk, CUSTOMER, OptOut.Source.KEYWORD)
    assert opt_outs.opted_out(business, CUSTOMER)


def test_one_businesss_register_says_nothing_about_anothers_customers() -> None:
    ours, theirs = factories.business(), factories.business()
    opt_outs.record(theirs.pk, CUSTOMER, OptOut.Source.KEYWORD)

    assert opt_outs.opted_out(theirs, CUSTOMER)
    assert not opt_outs.opted_out(ours, CUSTOMER)
    assert opt_outs.refusal(ours, CUSTOMER) is None
