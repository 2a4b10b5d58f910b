"""Chats and handoffs to the CRM (the push worker's code, run in-process against the emulated
portal): what is created, how it is found again, and that repeating a sync changes nothing."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from inbox.conversations import delivery_status
from inbox.conversations.events import StatusEvent
from inbox.conversations.models import Chat, Handoff, Message
from integrations.bitrix24 import hooks
from integrations.bitrix24.crm import fields
from integrations.bitrix24.models import CrmLink, FailedMessageSync, HandoffSync, UserLink
from integrations.bitrix24.rest.client import Bitrix24Client, WebhookAuth
from integrations.bitrix24.rest.limiter import LeakyBucket
from integrations.bitrix24.setup import config
from integrations.bitrix24.sync import push
from tests import factories
from tests.emulators.bitrix24 import Bitrix24Emulator
from tests.integrations.bitrix24.conftest import connect
from tests.processes import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _chat(channel: Any = None, name: str = "Aigerim Sadykova", phone: str = "") -> Chat:
    n = Chat.objects.count() + 1
    phone = phone or f"7700{n:07d}"
    return factories.chat(channel, customer_name=name, customer_phone=phone, customer_key=phone)


def _synced(business_id: int) -> push.DrainReport:
    report = push.drain(business_id)
    assert report.failed == 0, CrmLink.objects.exclude(last_error="").values_list("last_error")
    return report


def _handoff(chat: Chat, **facts: Any) -> Handoff:
    with transaction.atomic():
        handoff = Handoff.objects.create(
            chat=chat,
            reason="price_question",
            summary="Wants two oak tables delivered.",
            facts=facts or {"items": [{"name": "Oak table", "quantity": 2}], "city": "Almaty"},
        )
        hooks.handoff_created(handoff.pk)
    return handoff


def test_a_new_chat_creates_contact_deal_and_linked_comment_in_few_requests(
    portal: Bitrix24Emulator,
) -> None:
    cfg = connect(portal, pipeline_id=3)
    chat = _chat(factories.channel(cfg.business, kind="bridge"), phone="77001234567")
    with transaction.atomic():
        hooks.chat_created(chat.pk)

    report = _synced(cfg.business_id)

    (contact,) = portal.contacts()
    (deal,) = portal.deals()
    (comment,) = portal.comments_on("deal", deal["id"])
    assert (contact["name"], contact["lastName"]) == ("Aigerim", "Sadykova")
    assert [(e["typeId"], e["value"]) for e in contact["fm"]] == [("PHONE", "+77001234567")]
    assert deal["title"] == "WhatsApp: Aigerim Sadykova"
    assert (deal["categoryId"], deal["stageId"], deal["contactId"]) == (3, "C3:NEW", contact["id"])
    assert deal["assignedById"] == 1  # the webhook's (technical) user
    assert fields.chat_url(chat) in comment["COMMENT"]
    assert fields.chat_url(chat).startswith("http")
    link = CrmLink.objects.get(chat=chat)
    assert (link.entity_type, link.entity_id, link.contact_id) == (
        "deal",
        deal["id"],
        contact["id"],
    )
    assert (link.stage_semantics, link.stage_name) == ("in_progress", "New")
    assert link.link_comment_id == int(comment["ID"])
    assert not link.needs_sync
    assert report.requests == 3  # look up, contact, deal + comment (stages come from 1 more)
    assert len(portal.requests) == 4


def test_an_existing_contact_is_found_by_phone_and_not_duplicated(portal: Bitrix24Emulator) -> None:
    cfg = connect(portal)
    chat = _chat(factories.channel(cfg.business, kind="bridge"), phone="77001234567")
    portal.items[3][100] = {
        "id": 100,
        "name": "Aigerim (CRM)",
        "fm": [{"id": 1, "typeId": "PHONE", "valueType": "WORK", "value": "+7 (700) 123-45-67"}],
    }
    hooks.chat_created(chat.pk)

    _synced(cfg.business_id)

    assert [c["id"] for c in portal.contacts()] == [100]
    assert len(portal.contacts()[0]["fm"]) == 1
    assert portal.deals()[0]["contactId"] == 100


def test_nothing_happens_for_a_business_without_an_active_sync(portal: Bitrix24Emulator) -> None:
    unconfigured = _chat(factories.channel(factories.business(), kind="bridge"))
    cfg = connect(portal, is_active=False)
    inactive = _chat(factories.channel(cfg.business, kind="bridge"))

    with transaction.atomic():
        hooks.chat_created(unconfigured.pk)
        hooks.chat_created(inactive.pk)

    assert not CrmLink.objects.exists()
    assert portal.requests == []


def test_sandbox_chats_are_never_synced(portal: Bitrix24Emulator) -> None:
    cfg = connect(portal)
    trying = _chat(factories.channel(cfg.business, kind="sandbox"))

    with transaction.atomic():
        hooks.chat_created(trying.pk)

    assert not CrmLink.objects.exists()
    assert portal.requests == []


def test_the_sync_is_enqueued_only_when_the_chat_commits(
    portal: Bitrix24Emulator, redis_client: Any
) -> None:
    cfg = connect(portal)
    chat = _chat(factories.channel(cfg.business, kind="bridge"))

    with transaction.atomic():
        hooks.chat_created(chat.pk)
        assert redis_client.llen("integrations") == 0

    assert redis_client.llen("integrations") == 1  # the push task, waiting for a worker
    assert portal.requests == []  # no HTTP from the caller: the worker makes the calls


def test_lead_mode_creates_a_lead_and_falls_back_to_deals_when_leads_are_disabled(
    portal: Bitrix24Emulator,
) -> None:
    cfg = connect(portal, entity="lead")
    chat = _chat(factories.channel(cfg.business, kind="bridge"), phone="77001110000")
    hooks.chat_created(chat.pk)
    _synced(cfg.business_id)
    (lead,) = portal.leads()
    assert lead["stageId"] == "NEW"
    assert [e["value"] for e in lead["fm"]] == ["+77001110000"]

    with Bitrix24Emulator(leads_enabled=False) as simple_mode:
        cfg2 = connect(simple_mode, entity="lead")
        chat2 = _chat(factories.channel(cfg2.business, kind="bridge"))
        hooks.chat_created(chat2.pk)
        _synced(cfg2.business_id)
        assert simple_mode.leads() == []
        assert len(simple_mode.deals()) == 1
        assert CrmLink.objects.get(chat=chat2).entity_type == "deal"


def test_a_handoff_moves_the_deal_and_writes_reason_summary_and_facts(
    portal: Bitrix24Emulator,
) -> None:
    cfg = connect(
        portal,
        pipeline_id=3,
        handoff_stage="Manager needed",
        field_map={"city": "UF_CRM_CITY", "items": "UF_CRM_ITEMS"},
    )
    chat = _chat(factories.channel(cfg.business, kind="bridge"))
    hooks.chat_created(chat.pk)
    _synced(cfg.business_id)

    handoff = _handoff(chat)
    _synced(cfg.business_id)

    (deal,) = portal.deals()
    assert deal["stageId"] == "C3:HANDOFF"
    assert deal["UF_CRM_CITY"] == "45"  # the enum option's ID, not its label
    assert deal["UF_CRM_ITEMS"] == "Oak table × 2"
    comments = [c["COMMENT"] for c in portal.comments_on("deal", deal["id"])]
    assert len(comments) == 2
    assert "price_question" in comments[1]
    assert "Wants two oak tables" in comments[1]
    assert "Oak table × 2" in comments[1]
    assert "City: Almaty" in comments[1]
    link = CrmLink.objects.get(chat=chat)
    assert (link.stage_id, link.stage_name) == ("C3:HANDOFF", "Manager needed")
    assert link.crm_fields == {"city": "Almaty", "items": "Oak table × 2"}
    assert HandoffSync.objects.get(handoff=handoff).done_at is not None


def test_a_failed_quote_is_written_to_the_deals_timeline_once(portal: Bitrix24Emulator) -> None:
    cfg = connect(portal, pipeline_id=3)
    chat = _chat(factories.channel(cfg.business, kind="bridge"))
    hooks.chat_created(chat.pk)
    _synced(cfg.business_id)
    quote = Message.objects.create(
        chat=chat, channel=chat.channel, direction="out", author="bot", sent_by_bot=True,
        from_me=True, text="Oak table: 120 000 KZT.", provider_message_id="wamid.quote",
        status="sent",
    )  # fmt: skip

    with transaction.atomic():  # as the ingest consumer applies a status
        delivery_status.apply(
            StatusEvent(
                channel_id=chat.channel_id, provider_message_id="wamid.quote", status="failed",
                provider_ts=int(timezone.now().timestamp()), error_code="131026",
                error_title="Message undeliverable",
            )
        )  # fmt: skip
    _synced(cfg.business_id)
    _synced(cfg.business_id)  # nothing left to do: no second comment

    (deal,) = portal.deals()
    comments = [c["COMMENT"] for c in portal.comments_on("deal", deal["id"])]
    assert len(comments) == 2
    assert "The assistant's WhatsApp message was not delivered." in comments[1]
    assert "not on WhatsApp or cannot receive messages" in comments[1]
    assert "Oak table: 120 000 KZT." in comments[1]
    assert FailedMessageSync.objects.get(message=quote).done_at is not None


def test_the_assigned_manager_becomes_the_responsible_user(portal: Bitrix24Emulator) -> None:
    cfg = connect(portal)
    manager = factories.manager(cfg.business)
    UserLink.objects.create(business=cfg.business, user=manager, bitrix_user_id=27)
    chat = _chat(factories.channel(cfg.business, kind="bridge"))
    hooks.chat_created(chat.pk)
    _synced(cfg.business_id)

    Chat.objects.filter(pk=chat.pk).update(assigned_to=manager)
    hooks.chat_assigned(chat.pk)
    _synced(cfg.business_id)

    assert portal.deals()[0]["assignedById"] == 27
    link = CrmLink.objects.get(chat=chat)
    assert (link.responsible_id, link.responsible_user_id) == (27, manager.pk)


def test_a_manager_with_a_matching_email_is_mapped_automatically(portal: Bitrix24Emulator) -> None:
    cfg = connect(portal)
    manager = factories.manager(cfg.business)
    manager.email = "klaus@ex.kz"
    manager.save()
    chat = _chat(factories.channel(cfg.business, kind="bridge"))
    Chat.objects.filter(pk=chat.pk).update(assigned_to=manager)
    hooks.chat_created(chat.pk)
    hooks.chat_assigned(chat.pk)

    _synced(cfg.business_id)

    assert UserLink.objects.get(user=manager).bitrix_user_id == 27
    assert portal.deals()[0]["assignedById"] == 27


def test_a_batch_with_7_failing_commands_reports_and_retries_exactly_those(
    portal: Bitrix24Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = connect(portal)
    channel = factories.channel(cfg.business, kind="bridge")
    chats = [_chat(channel) for _ in range(16)]
    for chat in chats:
        hooks.chat_created(chat.pk)
    failure = portal.fail_commands(
        "crm.timeline.comment.add",
        7,
        code="INTERNAL_SERVER_ERROR",
        description="Internal error",
        status=500,
    )
    caplog.set_level(logging.WARNING, logger="integrations.bitrix24")

    first = push.drain(cfg.business_id)

    assert (first.synced, first.failed) == (9, 7)
    reported = [r for r in caplog.records if r.getMessage() == "bitrix24.batch_errors"]
    assert [r.failed for r in reported] == [7]  # type: ignore[attr-defined]
    failed_deals = {int(hit["fields"]["ENTITY_ID"]) for hit in failure.hits}
    failing = CrmLink.objects.exclude(last_error="")
    assert {link.entity_id for link in failing} == failed_deals
    assert all("INTERNAL_SERVER_ERROR" in link.last_error for link in failing)
    before = len(portal.executed)

    wait_for(lambda: push.drain(cfg.business_id).synced == 7, timeout=10, interval=0.1)

    retried = portal.executed[before:]
    assert sorted(e.method for e in retried if e.in_batch) == ["crm.timeline.comment.add"] * 7
    assert {int(e.params["fields"]["ENTITY_ID"]) for e in retried if e.in_batch} == failed_deals
    assert all(len(portal.comments_on("deal", d["id"])) == 1 for d in portal.deals())
    assert not CrmLink.objects.filter(needs_sync=True).exists()


def test_a_run_that_comes_back_for_put_off_chats_keeps_watch_until_the_last_is_due(
    portal: Bitrix24Emulator,
) -> None:
    # A storm puts chats off with jittered delays; the run that comes back first must not end
    # while one it cannot take yet is still waiting, or that chat waits for the periodic sweep.
    cfg = connect(portal)
    channel = factories.channel(cfg.business, kind="bridge")
    now_chat, later_chat = _chat(channel), _chat(channel)
    for chat in (now_chat, later_chat):
        hooks.chat_created(chat.pk)
    later = CrmLink.objects.get(chat=later_chat)
    CrmLink.objects.filter(pk=later.pk).update(
        next_attempt_at=timezone.now() + timedelta(seconds=30)
    )

    first_wakeup = push.drain(cfg.business_id)
    assert (first_wakeup.synced, first_wakeup.next_due) == (1, None)  # not its watch

    returning = push.drain(cfg.business_id, keep_watch=True, watch_for=240)
    assert returning.synced == 0
    assert returning.next_due is not None
    assert 25 < returning.next_due <= 30

    # Held by another run (its lease): that run answers for it.
    CrmLink.objects.filter(pk=later.pk).update(claimed_until=timezone.now() + timedelta(minutes=5))
    assert push.drain(cfg.business_id, keep_watch=True, watch_for=240).next_due is None
    # Put off for longer than a task may wait: the periodic sweep's.
    CrmLink.objects.filter(pk=later.pk).update(
        claimed_until=None, next_attempt_at=timezone.now() + timedelta(hours=1)
    )
    assert push.drain(cfg.business_id, keep_watch=True, watch_for=240).next_due is None

    CrmLink.objects.filter(pk=later.pk).update(next_attempt_at=None)
    assert push.drain(cfg.business_id, keep_watch=True, watch_for=240).synced == 1
    assert not CrmLink.objects.filter(needs_sync=True).exists()


def _crm_with_history(portal: Bitrix24Emulator) -> tuple[int, list[Chat]]:
    cfg = connect(
        portal, pipeline_id=3, handoff_stage="C3:HANDOFF", field_map={"city": "UF_CRM_CITY"}
    )
    channel = factories.channel(cfg.business, kind="bridge")
    chats = [_chat(channel, name=f"Клиент {i}") for i in range(6)]
    chats.append(factories.chat(channel, customer_name="No Phone", customer_key="BSUID.abc"))
    for chat in chats:
        hooks.chat_created(chat.pk)
    _synced(cfg.business_id)
    for chat in chats[:3]:
        _handoff(chat)
    _synced(cfg.business_id)
    return cfg.business_id, chats


def test_running_the_full_sync_twice_leaves_the_crm_byte_identical(
    portal: Bitrix24Emulator,
) -> None:
    business_id, chats = _crm_with_history(portal)
    before = portal.dump()
    writes = len(portal.writes())

    for _ in range(2):
        assert config.request_full_sync(business_id) == len(chats)
        _synced(business_id)
        assert portal.dump() == before

    assert len(portal.writes()) == writes
    assert len(portal.contacts()) == len(chats)
    assert len(portal.deals()) == len(chats)


def test_a_full_sync_after_losing_our_records_finds_everything_and_writes_nothing(
    portal: Bitrix24Emulator,
) -> None:
    business_id, _chats = _crm_with_history(portal)
    before, writes = portal.dump(), len(portal.writes())
    linked = dict(CrmLink.objects.values_list("chat_id", "entity_id"))
    comments = set(CrmLink.objects.values_list("link_comment_id", flat=True))
    HandoffSync.objects.all().delete()
    CrmLink.objects.all().delete()

    config.request_full_sync(business_id)
    _synced(business_id)

    assert portal.dump() == before
    assert len(portal.writes()) == writes
    assert dict(CrmLink.objects.values_list("chat_id", "entity_id")) == linked
    assert set(CrmLink.objects.values_list("link_comment_id", flat=True)) == comments
    assert HandoffSync.objects.filter(done_at__isnull=False).count() == 3


def test_a_phone_removed_in_the_crm_comes_back_once_and_a_changed_one_is_fixed_by_its_id(
    portal: Bitrix24Emulator,
) -> None:
    business_id, chats = _crm_with_history(portal)
    first, second = CrmLink.objects.filter(chat__in=chats[:2]).order_by("chat_id")
    with Bitrix24Client(WebhookAuth(portal.webhook_url), bucket=LeakyBucket("b24:x", 10, 10)) as c:
        c.call(
            "crm.item.update",
            {
                "entityTypeId": 3,
                "id": first.contact_id,
                "fields": {"fm": {str(first.phone_item_id): {"typeId": "PHONE", "value": ""}}},
            },
        )
        c.call(
            "crm.item.update",
            {
                "entityTypeId": 3,
                "id": second.contact_id,
                "fields": {
                    "fm": {str(second.phone_item_id): {"typeId": "PHONE", "value": "+7 000 000"}}
                },
            },
        )

    for _ in range(2):
        config.request_full_sync(business_id)
        _synced(business_id)

    contacts = {c["id"]: c for c in portal.contacts()}
    assert [e["value"] for e in contacts[first.contact_id]["fm"]] == [f"+{chats[0].customer_phone}"]
    restored = contacts[second.contact_id]["fm"]
    assert [(e["id"], e["value"]) for e in restored] == [
        (second.phone_item_id, f"+{chats[1].customer_phone}")
    ]


def test_a_deal_a_manager_moved_to_another_pipeline_is_commented_but_not_moved_back(
    portal: Bitrix24Emulator,
) -> None:
    from integrations.bitrix24.inbound import pull

    cfg = connect(portal, pipeline_id=3, handoff_stage="C3:HANDOFF")
    chat = _chat(factories.channel(cfg.business, kind="bridge"))
    hooks.chat_created(chat.pk)
    _synced(cfg.business_id)
    link = CrmLink.objects.get(chat=chat)
    portal.set_item(2, link.entity_id, by_user=27, categoryId=0, stageId="PREPARATION")
    pull.mark_remote_change(cfg.business_id, "deal", link.entity_id)
    pull.drain(cfg.business_id)

    _handoff(chat)
    _synced(cfg.business_id)

    (deal,) = portal.deals()
    assert (deal["categoryId"], deal["stageId"]) == (0, "PREPARATION")
    assert len(portal.comments_on("deal", deal["id"])) == 2
