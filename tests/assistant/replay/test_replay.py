"""Replay: a business's past turns answered again with a candidate change, by a real Celery
worker, with nothing sent; the report groups the turns, Apply makes the change live."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from assistant.knowledge import price_upload
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import AssistantSettings, PriceList, ReplayRun, ReplayTurn
from assistant.replay import engine
from assistant.turn import take_turn
from inbox.conversations.models import Business, Channel, Chat, Membership, Message, Turn
from tests import factories
from tests.processes import ProcessGroup, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

PRICES = (
    "SKU,Name,Price,Currency\nCH-101,Office chair Lux,45000,KZT\n"
    "CH-102,Kitchen chair Oak,28000,KZT\nSF-301,Sofa Milano 3-seat,310000,KZT\n"
)
# Office chair Lux costs more; the sofa is gone.
NEW_PRICES = (
    "SKU,Name,Price,Currency\nCH-101,Office chair Lux,49000,KZT\n"
    "CH-102,Kitchen chair Oak,28000,KZT\n"
)
RULES = "Delivery in Almaty costs 5 000 KZT. Assembly is free."
QUESTIONS = {
    "chair": "How much is the Office chair Lux?",
    "kitchen": "How much is the Kitchen chair Oak?",
    "sofa": "What does the Sofa Milano cost?",
    "delivery": "How much is delivery in Almaty?",
    "buy": "I want to buy 2 Kitchen chair Oak",
    "assembly": "Do you charge for assembly?",
}


@pytest.fixture(scope="module")
def worker(subprocess_env: dict[str, str]) -> Iterator[ProcessGroup]:
    """A real worker on every queue, without a model configured (the catalogue assistant)."""
    group = ProcessGroup(subprocess_env)
    group.start_celery_worker("replay-worker", env={"LLM_BASE_URL": ""})
    yield group
    group.stop_all()


def seed(name: str = "Mebel") -> tuple[Business, Channel, dict[str, Chat], Any]:
    """A shop with a price list, rules, an admin, and one answered chat per question."""
    business = factories.business(name)
    channel = factories.channel(business)
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), business)
    AssistantSettings.objects.create(business=business, business_rules=RULES)
    chats = {}
    for key, text in QUESTIONS.items():
        chat = factories.chat(channel, customer_name="", customer_phone="77011234567")
        factories.customer_message(chat, text)
        Chat.objects.filter(pk=chat.pk).update(version=1)
        take_turn(chat.pk)
        chats[key] = chat
    admin = factories.manager(business, role=Membership.Role.ADMIN)
    return business, channel, chats, admin


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def wait_done(run_id: int) -> ReplayRun:
    def finished() -> ReplayRun | None:
        run = ReplayRun.objects.get(pk=run_id)
        return run if run.status in (ReplayRun.Status.DONE, ReplayRun.Status.FAILED) else None

    run = wait_for(finished, timeout=90, interval=0.2, message="the replay to finish")
    assert run.status == ReplayRun.Status.DONE, run.error
    return run


def by_chat(run: ReplayRun) -> dict[int, ReplayTurn]:
    return {row.chat_id: row for row in run.turns.all()}


def start_form(business: Business, **extra: str) -> dict[str, str]:
    return {"business": str(business.pk), "days": "7", "limit": "200", "channel": "", **extra}


def rules_fields(business: Business, rules: str) -> dict[str, str]:
    config = AssistantSettings.objects.get(business=business)
    reasons = "\n".join(f"{r['code']}: {r['description']}" for r in config.reasons())
    return {
        "change_rules": "on",
        "rules-business_rules": rules,
        "rules-reasons_text": reasons,
        "rules-promises_text": "\n".join(config.promises()),
    }


def snapshot() -> tuple[int, int, list[tuple[int, str, int]]]:
    """What a replay must leave alone: messages, turns, and each chat's owner and version."""
    chats = list(Chat.objects.order_by("pk").values_list("pk", "owner", "version"))
    return Message.objects.count(), Turn.objects.count(), chats


def test_a_new_price_list_changes_exactly_the_turns_it_touches_and_applies_from_the_report(
    worker: ProcessGroup,
) -> None:
    business, _channel, chats, admin = seed()
    staged = price_upload.stage(NEW_PRICES.encode(), "new.csv", "KZT", business_id=business.pk,
                                channel_id=None, user=admin)  # fmt: skip
    before = snapshot()
    web = client_for(admin)

    response = web.post("/inbox/settings/replay/", start_form(business, upload=staged.token))

    assert response.status_code == 302
    run = wait_done(ReplayRun.objects.get(business=business).pk)
    rows = by_chat(run)
    assert len(rows) == len(QUESTIONS)
    changed = {key for key, chat in chats.items() if rows[chat.pk].change != "unchanged"}
    assert changed == {"chair", "sofa"}
    chair = rows[chats["chair"].pk]
    assert chair.change == ReplayTurn.Change.AMOUNT
    assert chair.then["amounts"] == [{"text": "45 000 KZT", "value": "45000.00", "ok": True}]
    assert chair.now["amounts"] == [{"text": "49 000 KZT", "value": "49000.00", "ok": True}]
    sofa = rows[chats["sofa"].pk]
    assert sofa.change == ReplayTurn.Change.DECISION
    assert sofa.now["action"] != "answer"
    assert "310 000" not in sofa.now["reply"]
    assert run.summary["counts"]["changed_amount"] == 1
    assert snapshot() == before  # nothing sent, no chat or turn touched

    page = web.get(f"/inbox/settings/replay/{run.pk}/").content.decode()
    assert "49 000 KZT: proven by the guardrail" in page
    assert f'href="/inbox/chat/{chats["chair"].pk}/"' in page
    assert "77011234567" not in page
    assert "…67" in page

    web.post(f"/inbox/settings/replay/{run.pk}/apply/")

    current = PriceList.objects.get(business=business, channel=None).current_version
    assert current is not None
    prices = {i.name: i.price for i in current.items.all()}
    assert prices == {"Office chair Lux": Decimal("49000"), "Kitchen chair Oak": Decimal("28000")}
    assert ReplayRun.objects.get(pk=run.pk).status == ReplayRun.Status.APPLIED


def test_edited_rules_change_the_fee_quoted_and_the_gate_asks_for_confirmation(
    worker: ProcessGroup,
) -> None:
    business, _channel, chats, admin = seed()
    AssistantSettings.objects.filter(business=business).update(
        replay_gate=True, replay_gate_threshold=0.0
    )
    new_rules = "Delivery in Almaty costs 7 000 KZT. Assembly is free."
    fields = rules_fields(business, new_rules)
    fields["rules-promises_text"] += "\nassembly is free"  # a new forbidden promise
    web = client_for(admin)

    web.post("/inbox/settings/replay/", start_form(business, **fields))

    run = wait_done(ReplayRun.objects.get(business=business).pk)
    rows = by_chat(run)
    delivery = rows[chats["delivery"].pk]
    assert delivery.change == ReplayTurn.Change.AMOUNT
    assert delivery.now["amounts"] == [{"text": "7 000 KZT", "value": "7000.00", "ok": True}]
    assembly = rows[chats["assembly"].pk]
    assert assembly.change == ReplayTurn.Change.BLOCKED
    assert assembly.now["blocked"] == ["forbidden promise: 'assembly is free'"]
    changed = {key for key, chat in chats.items() if rows[chat.pk].change != "unchanged"}
    assert changed == {"delivery", "assembly"}
    assert AssistantSettings.objects.get(business=business).business_rules == RULES  # not yet

    refused = web.post(f"/inbox/settings/replay/{run.pk}/apply/", follow=True).content.decode()
    assert "Not applied" in refused
    assert AssistantSettings.objects.get(business=business).business_rules == RULES
    web.post(f"/inbox/settings/replay/{run.pk}/apply/", {"confirm": "1"})
    assert AssistantSettings.objects.get(business=business).business_rules == new_rules


def test_a_model_endpoint_outside_the_egress_allow_list_is_refused(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    business, _channel, _chats, admin = seed()

    page = client_for(admin).post("/inbox/settings/replay/", start_form(
        business, model_base_url="http://127.0.0.1:9/v1", model_name="x")).content.decode()  # fmt: skip

    assert not ReplayRun.objects.exists()
    assert "address" in page.lower() or "not allowed" in page.lower()


def test_a_replay_sees_only_its_own_business_and_only_its_admins_see_it(
    worker: ProcessGroup,
) -> None:
    a, _ca, chats_a, admin_a = seed("Shop A")
    b, channel_b, chats_b, admin_b = seed("Shop B")
    manager_a = factories.manager(a)
    web_a = client_for(admin_a)
    web_a.post("/inbox/settings/replay/", start_form(a, **rules_fields(a, "Open 9 to 18.")))
    run = wait_done(ReplayRun.objects.get(business=a).pk)

    assert {row.chat_id for row in run.turns.all()} == {c.pk for c in chats_a.values()}
    assert client_for(admin_b).get(f"/inbox/settings/replay/{run.pk}/").status_code == 404
    assert client_for(admin_b).post(f"/inbox/settings/replay/{run.pk}/apply/").status_code == 404
    assert client_for(manager_a).get(f"/inbox/settings/replay/{run.pk}/").status_code == 403
    # B's admin cannot start a replay of A's business.
    page = client_for(admin_b).post("/inbox/settings/replay/", start_form(
        a, **rules_fields(a, "x"))).content.decode()  # fmt: skip
    assert ReplayRun.objects.filter(business=a).count() == 1
    assert "Select a valid choice" in page
    # Nor pick B's channel for A's replay.
    web_a.post("/inbox/settings/replay/", start_form(
        a, channel=str(channel_b.pk), **rules_fields(a, "x")))  # fmt: skip
    assert ReplayRun.objects.count() == 1
    assert b.pk not in {row.chat.channel.business_id for row in run.turns.all()}
    assert chats_b  # B's history exists and was not replayed

    # The same conversations again (a saved set), for A's admin only.
    again = web_a.get(f"/inbox/settings/replay/?again={run.pk}").content.decode()
    ids = ", ".join(str(pk) for pk in sorted(c.pk for c in chats_a.values()))
    assert f'value="{ids}"' in again
    assert client_for(admin_b).get(f"/inbox/settings/replay/?again={run.pk}").status_code == 404
    # With the permission, a viewer sees the phone numbers.
    admin_a.user_permissions.add(Permission.objects.get(codename="view_replay_phones"))
    assert (
        "77011234567"
        in client_for(admin_a).get(f"/inbox/settings/replay/{run.pk}/").content.decode()
    )


def test_a_replay_whose_worker_died_shows_as_failed_not_running_forever() -> None:
    business = factories.business()
    admin = factories.manager(business, role=Membership.Role.ADMIN)
    run = ReplayRun.objects.create(business=business, status=ReplayRun.Status.RUNNING)
    long_ago = timezone.now() - timedelta(seconds=engine.REPLAY_TIME_LIMIT_SECONDS + 1)
    ReplayRun.objects.filter(pk=run.pk).update(created_at=long_ago)

    page = client_for(admin).get(f"/inbox/settings/replay/{run.pk}/").content.decode()

    assert "The replay failed: interrupted" in page
    assert ReplayRun.objects.get(pk=run.pk).status == ReplayRun.Status.FAILED
