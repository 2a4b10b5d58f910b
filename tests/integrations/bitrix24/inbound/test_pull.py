"""Changes in the CRM back to the inbox (the pull worker's code, in-process): managers' changes
apply, our own echoes and the technical user's changes do not, and nothing is ever written back."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from inbox.conversations.models import Chat, Handoff, Owner
from integrations.bitrix24 import hooks
from integrations.bitrix24.inbound import offline, pull, reconcile
from integrations.bitrix24.models import Bitrix24Settings, CrmLink, PendingPull
from integrations.bitrix24.rest.client import Command
from integrations.bitrix24.rest.connection import client_for
from integrations.bitrix24.sync import push
from tests import factories
from tests.emulators.bitrix24 import Bitrix24Emulator
from tests.integrations.bitrix24.conftest import connect

pytestmark = pytest.mark.django_db(transaction=True)


def _synced_chat(portal: Bitrix24Emulator, **options: Any) -> tuple[Bitrix24Settings, Chat]:
    options.setdefault("pipeline_id", 3)
    options.setdefault("handoff_stage", "C3:HANDOFF")
    cfg = connect(portal, **options)
    chat = factories.chat(
        factories.channel(cfg.business, kind="bridge"),
        customer_name="Aigerim Sadykova",
        customer_phone="77001234567",
        customer_key="77001234567",
    )
    hooks.chat_created(chat.pk)
    with transaction.atomic():
        handoff = Handoff.objects.create(chat=chat, reason="price_question", summary="Two tables")
        hooks.handoff_created(handoff.pk)
    assert push.drain(cfg.business_id).failed == 0
    return cfg, chat


def _event(cfg: Bitrix24Settings, entity: str, entity_id: int) -> pull.PullReport:
    pull.mark_remote_change(
        cfg.business_id, entity, entity_id, event=f"ONCRM{entity.upper()}UPDATE"
    )
    return pull.drain(cfg.business_id)


def test_the_echo_of_our_own_write_is_dropped_without_any_write(portal: Bitrix24Emulator) -> None:
    cfg, chat = _synced_chat(portal)
    link = CrmLink.objects.get(chat=chat)
    writes, snapshot = len(portal.writes()), (link.stage_id, link.synced_hash)

    report = _event(cfg, "deal", link.entity_id)
    contact_report = _event(cfg, "contact", link.contact_id)

    assert (report.echoes, report.applied) == (1, 0)
    assert (contact_report.echoes, contact_report.applied) == (1, 0)
    assert len(portal.writes()) == writes
    link.refresh_from_db()
    assert (link.stage_id, link.synced_hash) == snapshot
    assert not PendingPull.objects.exists()


def test_a_deal_won_by_a_manager_shows_on_the_chat(portal: Bitrix24Emulator) -> None:
    cfg, chat = _synced_chat(portal)
    link = CrmLink.objects.get(chat=chat)
    writes = len(portal.writes())

    portal.set_item(2, link.entity_id, by_user=27, stageId="C3:WON", assignedById=27)
    report = _event(cfg, "deal", link.entity_id)

    assert report.applied == 1
    link.refresh_from_db()
    assert (link.stage_id, link.stage_semantics, link.stage_name) == ("C3:WON", "won", "Deal won")
    assert link.responsible_id == 27
    assert len(portal.writes()) == writes  # reading a change never writes back

    again = _event(cfg, "deal", link.entity_id)  # the same state read twice is no change
    assert (again.applied, again.echoes) == (0, 1)


def test_a_change_by_the_technical_user_is_ignored(portal: Bitrix24Emulator) -> None:
    cfg, chat = _synced_chat(portal)
    link = CrmLink.objects.get(chat=chat)

    portal.set_item(2, link.entity_id, by_user=cfg.technical_user_id or 1, stageId="C3:LOSE")
    report = _event(cfg, "deal", link.entity_id)

    assert (report.applied, report.ignored) == (0, 1)
    assert CrmLink.objects.get(chat=chat).stage_id == "C3:HANDOFF"


def test_a_contact_renamed_in_the_crm_renames_the_customer_and_nothing_else(
    portal: Bitrix24Emulator,
) -> None:
    cfg, chat = _synced_chat(portal)
    link = CrmLink.objects.get(chat=chat)
    Chat.objects.filter(pk=chat.pk).update(owner=Owner.HUMAN, version=7)

    portal.set_item(3, link.contact_id, by_user=27, name="Айгерим", lastName="Садыкова")
    report = _event(cfg, "contact", link.contact_id)

    assert report.applied == 1
    chat.refresh_from_db()
    assert chat.customer_name == "Айгерим Садыкова"
    assert (chat.owner, chat.version) == (Owner.HUMAN, 7)


def test_a_deleted_deal_is_marked_on_the_link(portal: Bitrix24Emulator) -> None:
    cfg, chat = _synced_chat(portal)
    link = CrmLink.objects.get(chat=chat)
    with client_for(cfg) as client:
        client.call("crm.item.delete", {"entityTypeId": 2, "id": link.entity_id})

    _event(cfg, "deal", link.entity_id)

    assert CrmLink.objects.get(chat=chat).remote_deleted


def test_many_events_are_read_back_with_one_request(portal: Bitrix24Emulator) -> None:
    cfg = connect(portal)
    channel = factories.channel(cfg.business, kind="bridge")
    for i in range(30):
        hooks.chat_created(factories.chat(channel, customer_phone=f"7701{i:07d}").pk)
    push.drain(cfg.business_id)
    before = len(portal.requests)
    for link in CrmLink.objects.all():
        pull.mark_remote_change(cfg.business_id, "deal", link.entity_id)
        pull.mark_remote_change(cfg.business_id, "contact", link.contact_id)

    report = pull.drain(cfg.business_id)

    assert report.echoes == 60
    assert len(portal.requests) - before == 2  # 50 + 10 rows, each page one batch request


def test_reconciliation_catches_a_change_whose_event_never_came(portal: Bitrix24Emulator) -> None:
    cfg, chat = _synced_chat(portal)
    link = CrmLink.objects.get(chat=chat)
    first = reconcile.reconcile(cfg.business_id)
    assert first.applied == 0  # everything it sees is what we wrote

    portal.set_item(2, link.entity_id, by_user=27, stageId="C3:WON")  # no event delivered
    report = reconcile.reconcile(cfg.business_id)

    assert report.applied == 1
    assert CrmLink.objects.get(chat=chat).stage_semantics == "won"
    cfg.refresh_from_db()
    assert cfg.reconcile_checkpoint is not None
    assert cfg.reconcile_checkpoint.tzinfo is not None
    listed = portal.calls("crm.item.list")[-2]
    assert "+" in listed.params["filter"][">updatedTime"]  # sent with its offset


def _app(portal: Bitrix24Emulator, **options: Any) -> Bitrix24Settings:
    from integrations.bitrix24.setup import config

    access, refresh = portal.issue_app_tokens()
    cfg = config.configure(
        factories.business(),
        mode="app",
        portal_url=portal.base_url,
        client_id=portal.app_client_id,
        client_secret=portal.app_client_secret,
        rate_limit=portal.rate,
        burst=portal.burst,
        pipeline_id=3,
        **options,
    )
    Bitrix24Settings.objects.filter(pk=cfg.pk).update(
        access_token=access,
        refresh_token=refresh,
        oauth_server_url=portal.base_url,
        application_token=portal.app_application_token,
    )
    cfg.refresh_from_db()
    return cfg


def test_offline_events_are_reserved_recorded_then_cleared_and_our_writes_are_not_queued(
    portal: Bitrix24Emulator,
) -> None:
    cfg = _app(portal)
    with client_for(cfg) as client:
        for index, event in enumerate(["ONCRMDEALUPDATE", "ONCRMCONTACTUPDATE"]):
            client.batch(
                [
                    Command(
                        f"b{index}",
                        "event.bind",
                        {
                            "event": event,
                            "event_type": "offline",
                            "auth_connector": cfg.auth_connector,
                        },
                    )
                ]
            )
    chat = factories.chat(
        factories.channel(cfg.business, kind="bridge"), customer_phone="77005550000"
    )
    hooks.chat_created(chat.pk)
    push.drain(cfg.business_id)
    link = CrmLink.objects.get(chat=chat)
    assert portal.offline == []  # our own writes carried auth_connector

    portal.set_item(2, link.entity_id, by_user=27, stageId="C3:WON")
    portal.set_item(2, link.entity_id, by_user=27, stageId="C3:WON")  # one record per object
    assert len(portal.offline) == 1

    assert offline.process_offline(cfg.business_id) == 1
    assert portal.offline == []
    assert PendingPull.objects.filter(source="offline").count() == 1
    pull.drain(cfg.business_id)
    assert CrmLink.objects.get(chat=chat).stage_semantics == "won"


def test_an_offline_reservation_interrupted_midway_is_resumed_by_its_process_id(
    portal: Bitrix24Emulator,
) -> None:
    cfg = _app(portal)
    with client_for(cfg) as client:
        client.call("event.bind", {"event": "ONCRMDEALUPDATE", "event_type": "offline"})
        deal = client.call("crm.item.add", {"entityTypeId": 2, "fields": {"title": "x"}})
        portal.set_item(2, deal.result["item"]["id"], stageId="WON")
        # A worker reserved the records and died before recording them:
        reserved = client.call("event.offline.get", {"clear": 0}).result
    Bitrix24Settings.objects.filter(pk=cfg.pk).update(offline_process_id=reserved["process_id"])
    assert all(r.process_id for r in portal.offline)

    assert offline.process_offline(cfg.business_id) == 1

    assert portal.offline == []
    assert PendingPull.objects.filter(entity_id=deal.result["item"]["id"]).exists()
    assert Bitrix24Settings.objects.get(pk=cfg.pk).offline_process_id == ""
