"""The weekly review's fixes: flags, handoffs outside the price list and rejected drafts grouped
by the item the assistant read and by reason; "add alias" and "add the missing item" change
what the real (catalogue) assistant answers next time and mark the flag fixed; another
business's flag or item is a 404."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from assistant.decision.model_reading import handoff_reason
from assistant.decision.reading import Quote
from assistant.knowledge.effective import KnowledgeItem
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import PriceList, ReplayRun, default_handoff_reasons
from assistant.replay import engine
from assistant.schema import Reading
from assistant.turn import take_turn
from inbox.conversations.flags import flag_message
from inbox.conversations.models import Chat, Draft, Message, MessageFlag
from inbox.web.settings import review_fixes
from tests import factories
from tests.inbox.tenants import Tenant

pytestmark = pytest.mark.django_db

PRICES = (
    "SKU,Name,Price,Currency\n"
    "CH-101,Office chair Lux,45000,KZT\n"
    "CH-102,Kitchen chair Oak,28000,KZT\n"
)


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _reply(chat: Chat, text: str) -> Message:
    """The bot's reply of a real turn (the catalogue assistant) to the customer's `text`."""
    factories.customer_message(chat, text)
    chat.refresh_from_db()
    Chat.objects.filter(pk=chat.pk).update(version=chat.version + 1)
    turn = take_turn(chat.pk)
    assert turn is not None
    assert turn.reply_message is not None
    return turn.reply_message


def _fresh_chat(tenant: Tenant) -> Chat:
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), tenant.business)
    return factories.chat(tenant.channel, customer_phone="77019998877", customer_name="Dana")


def _flag(tenant: Tenant, reply: Message, category: str = "wrong_item") -> MessageFlag:
    return flag_message(
        tenant.manager, reply.chat_id, reply.pk, MessageFlag.Category(category), "not that one"
    )


def test_entries_are_grouped_by_the_item_read_and_by_reason(a: Tenant) -> None:
    chat = _fresh_chat(a)
    quoted = _reply(chat, "How much for 4 Office chair Lux?")
    flag = _flag(a, quoted, "wrong_amount")
    Draft.objects.create(
        chat=chat, text="Kitchen chair Oak: 28 000 KZT", generated_at_version=1,
        answered_up_to=1, state=Draft.State.REJECTED,
    )  # fmt: skip

    entries = review_fixes.open_entries(a.admin)
    by_item = dict(review_fixes.by_item(entries))
    by_reason = dict(review_fixes.by_reason(entries))

    assert [e.source for e in by_item["CH-101 · Office chair Lux"]] == [f"flag:{flag.pk}"]
    assert [e.source for e in by_reason["Wrong amount"]] == [f"flag:{flag.pk}"]
    assert [e.source for e in by_reason["Outside the price list"]] == [f"handoff:{a.handoff.pk}"]
    assert [e.reason_code for e in by_reason["Draft rejected"]] == ["draft_rejected"]
    assert by_item["CH-101 · Office chair Lux"][0].customer_words == (
        "How much for 4 Office chair Lux?"
    )

    page = _client(a.admin).get("/inbox/review/").content.decode()
    assert 'data-item="CH-101 · Office chair Lux"' in page
    assert f'href="/inbox/review/fix/alias/?source=flag%3A{flag.pk}"' in page
    assert "rule=How%20much%20for%204%20Office%20chair%20Lux%3F" in page  # the rule prefilled


def test_add_alias_makes_the_assistant_quote_that_item_for_the_customers_words(
    a: Tenant,
) -> None:
    chat = _fresh_chat(a)
    missed = _reply(chat, "how much is the boss throne")
    assert "45 000" not in missed.text  # the list does not know these words yet
    flag = _flag(a, missed)
    admin = _client(a.admin)
    item = PriceList.objects.get(business=a.business).current_version.items.get(sku="CH-101")

    form = admin.get(f"/inbox/review/fix/alias/?source=flag:{flag.pk}").content.decode()
    assert 'value="how much is the boss throne"' in form  # the customer's words, prefilled
    saved = admin.post(
        "/inbox/review/fix/alias/",
        {"source": f"flag:{flag.pk}", "words": "boss throne", "item": item.pk},
    )
    assert saved.status_code == 302

    current = PriceList.objects.get(business=a.business).current_version
    assert current.number == 2  # a new version, like an edit on the price-list page
    assert "boss throne" in current.items.get(sku="CH-101").aliases
    flag.refresh_from_db()
    assert flag.resolved_at is not None
    assert flag.resolved_by == a.admin
    assert "boss throne" in flag.resolution
    assert "Office chair Lux" in flag.resolution
    assert flag.pk not in {e.pk for e in review_fixes.open_entries(a.admin) if e.kind == "flag"}

    again = factories.chat(a.channel, customer_phone="77019998866", customer_name="Erlan")
    assert "Office chair Lux" in _reply(again, "how much is the boss throne").text
    page = admin.get("/inbox/review/").content.decode()
    assert f'data-resolved="flag:{flag.pk}"' in page
    assert f'data-entry="flag:{flag.pk}"' not in page


def test_add_the_missing_item_with_the_price_the_customer_named(a: Tenant) -> None:
    chat = _fresh_chat(a)
    missed = _reply(chat, "Standing desk 90000?")
    flag = _flag(a, missed, "should_have_handed_off")
    admin = _client(a.admin)

    form = admin.get(f"/inbox/review/fix/item/?source=flag:{flag.pk}").content.decode()
    assert 'name="price" value="90000"' in form
    refused = admin.post(
        "/inbox/review/fix/item/", {"source": f"flag:{flag.pk}", "name": "Desk", "price": "abc"}
    )
    assert "is not a number" in refused.content.decode()
    assert PriceList.objects.get(business=a.business).current_version.number == 1

    admin.post(
        "/inbox/review/fix/item/",
        {"source": f"flag:{flag.pk}", "name": "Standing desk", "price": "90000"},
    )
    current = PriceList.objects.get(business=a.business).current_version
    assert current.number == 2
    assert current.items.get(name="Standing desk").currency == "KZT"
    flag.refresh_from_db()
    assert flag.resolved_at is not None

    again = factories.chat(a.channel, customer_phone="77019998866", customer_name="Erlan")
    assert "Standing desk: 90 000 KZT" in _reply(again, "How much for a standing desk?").text


def test_mark_fixed_after_a_rule_line(a: Tenant) -> None:
    chat = _fresh_chat(a)
    flag = _flag(a, _reply(chat, "How much for 4 Office chair Lux?"))
    _client(a.admin).post(
        "/inbox/review/fix/done/", {"source": f"flag:{flag.pk}", "fix": "rule line added"}
    )
    flag.refresh_from_db()
    assert flag.resolution == "rule line added"
    assert flag.resolved_by == a.admin


def test_another_businesss_flags_and_items_are_not_found(a: Tenant, b: Tenant) -> None:
    chat = _fresh_chat(a)
    flag = _flag(a, _reply(chat, "how much is the boss throne"))
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), b.business)
    b_item = PriceList.objects.get(business=b.business).current_version.items.first()
    source = f"flag:{flag.pk}"

    other = _client(b.admin)
    assert other.get(f"/inbox/review/fix/alias/?source={source}").status_code == 404
    assert other.get(f"/inbox/review/fix/item/?source={source}").status_code == 404
    assert other.post("/inbox/review/fix/done/", {"source": source}).status_code == 404
    assert f'data-entry="{source}"' not in other.get("/inbox/review/").content.decode()
    # Their own admin cannot give the words to another business's item either.
    own = _client(a.admin).post(
        "/inbox/review/fix/alias/", {"source": source, "words": "throne", "item": b_item.pk}
    )
    assert own.status_code == 404
    assert _client(a.manager).get(f"/inbox/review/fix/alias/?source={source}").status_code == 403
    flag.refresh_from_db()
    assert flag.resolved_at is None
    assert PriceList.objects.get(business=b.business).current_version.number == 1


def test_manager_only_hands_every_question_about_the_item_to_a_person(a: Tenant) -> None:
    chat = _fresh_chat(a)
    quoted = _reply(chat, "How much for 4 Office chair Lux?")
    assert "180 000 KZT" in quoted.text
    flag = _flag(a, quoted, "should_have_handed_off")
    item = PriceList.objects.get(business=a.business).current_version.items.get(sku="CH-101")
    admin = _client(a.admin)

    form = admin.get(f"/inbox/review/fix/manager-only/?source=flag:{flag.pk}").content.decode()
    assert "Office chair Lux (the bot read this)" in form
    admin.post("/inbox/review/fix/manager-only/", {"source": f"flag:{flag.pk}", "item": item.pk})
    current = PriceList.objects.get(business=a.business).current_version
    assert current.items.get(sku="CH-101").availability_note == "manager only"
    flag.refresh_from_db()
    assert flag.resolution == "Office chair Lux made manager only (v2)"

    again = factories.chat(a.channel, customer_phone="77019998866", customer_name="Erlan")
    reply = _reply(again, "How much for 4 Office chair Lux?")
    assert "45 000" not in reply.text
    handoff = again.handoffs.get()
    assert handoff.reason == "non_standard_terms"
    assert "Only a manager answers about: Office chair Lux" in handoff.summary
    # The other items are still quoted.
    other = factories.chat(a.channel, customer_phone="77019998855", customer_name="Gulnara")
    assert "28 000 KZT" in _reply(other, "How much for Kitchen chair Oak?").text


def test_the_model_path_hands_a_manager_only_item_to_a_person_too() -> None:
    held = KnowledgeItem(sku="CH-101", name="Chair", price=Decimal(1), currency="KZT")
    held = replace(held, availability_note="manager only")
    free = replace(held, availability_note="")
    codes = {"non_standard_terms"}
    assert handoff_reason(Reading(), [Quote(held, Decimal(1))], codes) == "non_standard_terms"
    assert handoff_reason(Reading(), [Quote(free, Decimal(1))], codes) == ""


def test_replay_first_tries_the_alias_on_the_chat_then_apply_writes_it_and_resolves(
    a: Tenant,
) -> None:
    chat = _fresh_chat(a)
    flag = _flag(a, _reply(chat, "how much is the boss throne"))
    item = PriceList.objects.get(business=a.business).current_version.items.get(sku="CH-101")
    admin = _client(a.admin)

    tried = admin.post(
        "/inbox/review/fix/alias/",
        {"source": f"flag:{flag.pk}", "words": "boss throne", "item": item.pk, "then": "replay"},
    )
    run = ReplayRun.objects.get(business=a.business)
    assert tried["Location"] == f"/inbox/settings/replay/{run.pk}/"
    assert PriceList.objects.get(business=a.business).current_version.number == 1  # not yet
    flag.refresh_from_db()
    assert flag.resolved_at is None

    engine.replay(run.pk)  # what the assistant queue's worker runs (assistant.replay)
    run.refresh_from_db()
    assert run.status == ReplayRun.Status.DONE
    replayed = run.turns.get(chat=chat)
    assert "Office chair Lux" not in replayed.then["reply"]
    assert "Office chair Lux" in replayed.now["reply"]
    assert "45 000 KZT" in replayed.now["reply"]

    admin.post(f"/inbox/settings/replay/{run.pk}/apply/")
    current = PriceList.objects.get(business=a.business).current_version
    assert current.number == 2
    assert "boss throne" in current.items.get(sku="CH-101").aliases
    flag.refresh_from_db()
    assert (
        flag.resolution == f"alias “boss throne” → Office chair Lux (replayed first, run #{run.pk})"
    )


def test_add_a_rule_from_the_review_then_the_assistant_answers_with_it(a: Tenant) -> None:
    chat = _fresh_chat(a)
    missed = _reply(chat, "Do you deliver to Astana?")
    assert "3 days" not in missed.text
    flag = _flag(a, missed, "should_have_handed_off")
    admin = _client(a.admin)

    review = admin.get("/inbox/review/").content.decode()
    link = f"/inbox/settings/assistant/?business={a.business.pk}&amp;rule=Do%20you%20deliver%20to%20Astana%3F"
    assert link in review
    form = admin.get(link.replace("&amp;", "&")).content.decode()
    assert "Q: Do you deliver to Astana?\nA: " in form

    reasons = "\n".join(f"{r['code']}: {r['description']}" for r in default_handoff_reasons())
    rules = "Q: Do you deliver to Astana?\nA: Delivery to Astana takes 3 days and costs 5000 KZT."
    saved = admin.post(
        "/inbox/settings/assistant/", {"business_rules": rules, "reasons_text": reasons}
    )
    assert saved.status_code == 302
    admin.post("/inbox/review/fix/done/", {"source": f"flag:{flag.pk}", "fix": "rule line added"})
    flag.refresh_from_db()
    assert flag.resolved_at is not None

    again = factories.chat(a.channel, customer_phone="77019998866", customer_name="Erlan")
    assert "Delivery to Astana takes 3 days" in _reply(again, "Do you deliver to Astana?").text
