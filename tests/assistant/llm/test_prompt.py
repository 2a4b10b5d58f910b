"""The prompt: fixed content first, byte-identical across chats of a channel up to the end of the
price list; history with managers and voice transcripts; retrieval past the context budget."""

from __future__ import annotations

import pytest

from assistant.knowledge.effective import assistant_settings, knowledge_for_channel
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.llm.prompt import (
    build_messages,
    estimate_tokens,
    inline_schema,
    stable_prefix_chars,
)
from assistant.models import AssistantSettings
from tests import factories
from tests.assistant.builders import FURNITURE, entry, item, knowledge, turn
from tests.emulators.openai_server import render_prompt

CONFIG = AssistantSettings()

PRICES = (
    "SKU;Name;Price;Currency;Stock;Description\n"
    "CH-101;Office chair Lux;45 000;KZT;yes;Mesh back\n"
    "TB-201;Oak dining table 160;120 000;KZT;under order 2 weeks;Solid oak\n"
)


@pytest.mark.django_db
def test_two_chats_of_one_channel_share_the_prompt_byte_for_byte_up_to_the_price_list():
    biz = factories.business("Mebel Plus")
    channel = factories.channel(biz)
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), biz)
    AssistantSettings.objects.create(business=biz, business_rules="Delivery in Almaty: 1-2 days.")
    k, config = knowledge_for_channel(channel.pk), assistant_settings(biz.pk)
    first = turn(
        "how much is the oak table?",
        chat_id=1,
        business_id=biz.pk,
        channel_id=channel.pk,
        history=[entry("customer", "hi", 0), entry("bot", "Hello!", 1)],
    )
    second = turn(
        "Сколько стоит кресло?",
        chat_id=2,
        business_id=biz.pk,
        channel_id=channel.pk,
        history=[
            entry("customer", "можно скидку?", 0),
            entry("manager", "Да, 40 000 KZT для вас", 1),
            entry("customer", "э кресло две штуки", 2, confidence=0.42),
        ],
    )
    a = build_messages(first, knowledge_for_channel(channel.pk), config)
    b = build_messages(second, k, config)
    text_a, text_b = render_prompt(a), render_prompt(b)
    end_of_price_list = text_a.index("Oak dining table 160 | 120 000 KZT") + 60
    assert text_a[:end_of_price_list] == text_b[:end_of_price_list]
    assert a[0] == b[0]
    assert stable_prefix_chars(a) == len(a[0]["content"]) > 1000
    assert text_a != text_b


def test_order_is_rules_then_business_then_price_list_then_history_then_turn():
    config = AssistantSettings(business_rules="Delivery in Almaty: 1-2 days.")
    t = turn(
        "and the sofa?",
        history=[
            entry("customer", "price of the chair?", 0),
            entry("bot", "45 000 KZT", 1),
            entry("manager", "I can give you 40 000 KZT", 2),
            entry("customer", "ok and a table", 3, confidence=0.55),
        ],
    )
    text = render_prompt(build_messages(t, knowledge(), config, "json_schema"))
    markers = [
        "Rules:",
        "Business rules:",
        "Delivery in Almaty: 1-2 days.",
        "Handoff reasons",
        "- asks_for_human:",
        "Price list (7 items):",
        "CH-101 | Office chair Lux | 45 000 KZT | in stock",
        "Conversation so far",
        "Customer: price of the chair?",
        "Assistant (you): 45 000 KZT",
        "Manager: I can give you 40 000 KZT",
        "Customer (voice note, transcript confidence 0.55): ok and a table",
        "New message(s) from the customer",
        "Customer: and the sofa?",
    ]
    positions = [text.index(m) for m in markers]
    assert positions == sorted(positions)


def test_json_object_mode_embeds_the_schema_in_the_stable_prefix():
    messages = build_messages(turn("hi"), knowledge(), AssistantSettings(), "json_object")
    assert '"reply_to_customer"' in messages[0]["content"]
    schema_mode = build_messages(turn("hi"), knowledge(), AssistantSettings(), "json_schema")
    assert '"reply_to_customer"' not in schema_mode[0]["content"]


def test_a_list_past_the_budget_is_retrieved_per_turn_with_exact_sku_lookup(settings):
    many = tuple(
        item(f"P-{n:04d}", f"Spare part model {n} bracket", str(1000 + n)) for n in range(600)
    )
    big = knowledge((*FURNITURE, *many))
    settings.LLM_CONTEXT_BUDGET_TOKENS = 800
    settings.LLM_RETRIEVAL_ITEMS = 5
    messages = build_messages(
        turn("price of P-0421 and the oak dining table?"), big, AssistantSettings(), "json_schema"
    )
    system, user = messages[0]["content"], messages[1]["content"]
    assert "607 items, too many to show here" in system
    assert "Office chair Lux" not in system
    assert "P-0421 | Spare part model 421 bracket | 1 421 KZT" in user
    assert "Oak dining table 160" in user
    assert "P-0422" not in user
    retrieved = user.split("Conversation so far")[0]
    assert estimate_tokens(retrieved) < 800 + 100
    # The system message is still the same for every chat of the channel.
    other = build_messages(turn("sofa?", chat_id=9), big, AssistantSettings(), "json_schema")
    assert other[0] == messages[0]


def test_the_whole_list_goes_in_when_it_fits():
    text = build_messages(turn("x"), knowledge(), AssistantSettings(), "json_schema")[0]["content"]
    for it in FURNITURE:
        assert it.name in text


def _after_release(*manager: str) -> list:
    return [
        entry("customer", "How much is the Office chair Lux? I may take several.", 0),
        entry("bot", "Office chair Lux: 45 000 KZT, in stock.", 1),
        entry("customer", "Could you do it cheaper?", 2),
        *[entry("manager", text, 3 + i) for i, text in enumerate(manager)],
    ]


def test_a_managers_agreed_price_opens_the_prompt_as_a_binding_fact():
    history = _after_release("For you the office chair is 40 000 KZT instead of 45 000.")
    t = turn("so how much is the office chair then? I want 2", history=history)
    system, user = build_messages(t, knowledge(), CONFIG, "json_schema")
    text = user["content"]
    assert text.startswith("Binding facts of this chat: a manager agreed with this customer:")
    assert "- Office chair Lux: 40 000 KZT per unit instead of the list's 45 000 KZT" in text
    assert '"For you the office chair is 40 000 KZT instead of 45 000."' in text
    assert "override the price list; never contradict them" in text
    # Chat-specific facts stay out of the system message the channel's chats share.
    assert "40 000" not in system["content"]


def test_the_latest_agreement_for_an_item_is_the_one_shown():
    history = _after_release(
        "The office chair is 42 000 KZT for you.", "Fine, 40 000 KZT for the office chair."
    )
    _, user = build_messages(turn("ok", history=history), knowledge(), CONFIG, "json_schema")
    assert "40 000 KZT per unit" in user["content"]
    assert "42 000 KZT per unit" not in user["content"]


def test_an_agreement_holds_after_its_message_scrolled_out_of_the_shown_history(settings):
    settings.LLM_HISTORY_MESSAGES = 2
    history = [
        *_after_release("The office chair is 40 000 KZT for you."),
        *[entry("customer", f"question {n}", 10 + n) for n in range(4)],
    ]
    _, user = build_messages(turn("and now?", history=history), knowledge(), CONFIG, "json_schema")
    conversation = user["content"].split("Conversation so far", 1)[1]
    assert "40 000 KZT for you" not in conversation  # the message itself is not shown …
    assert "Office chair Lux: 40 000 KZT per unit" in user["content"]  # … its agreement is


def test_a_managers_delivery_day_and_terms_are_binding_facts_too():
    history = _after_release(
        "The office chair is 40 000 KZT for you.", "We deliver on Saturday, assembly free for you."
    )
    _, user = build_messages(turn("when?", history=history), knowledge(), CONFIG, "json_schema")
    facts = user["content"].split("Conversation so far", 1)[0]
    assert '- the manager wrote: "We deliver on Saturday, assembly free for you."' in facts
    assert facts.count("The office chair is 40 000 KZT for you.") == 1  # shown with its price


def test_no_manager_no_binding_facts():
    history = [entry("customer", "hi", 0), entry("bot", "Hello!", 1)]
    _, user = build_messages(turn("price?", history=history), knowledge(), CONFIG, "json_schema")
    assert "Binding facts" not in user["content"]


def test_the_customers_claim_is_not_an_agreement():
    history = [entry("customer", "Your manager said the office chair is 30 000 KZT", 0)]
    _, user = build_messages(turn("so?", history=history), knowledge(), CONFIG, "json_schema")
    assert "Binding facts" not in user["content"]


def test_the_compact_prompt_retrieves_fewer_items_and_keeps_the_agreed_item(settings):
    history = _after_release("The office chair is 40 000 KZT for you.")
    t = turn("what about a sofa?", history=history)
    full_system, _ = build_messages(t, knowledge(), CONFIG, "json_object")
    system, user = build_messages(t, knowledge(), CONFIG, "json_object", compact=True)
    assert "Price list: 7 items, too many to show here" in system["content"]
    assert len(system["content"]) < len(full_system["content"])
    retrieved = user["content"].split("Matching items from the price list", 1)[1]
    assert "Office chair Lux" in retrieved.split("Conversation so far", 1)[0]
    assert "Binding facts" in user["content"]


def test_json_object_prompt_carries_the_inlined_schema_llama_cpp_applies():
    system, _ = build_messages(turn("hi"), knowledge(), CONFIG, "json_object")
    assert '"reply_to_customer":{"type":"string","maxLength":500}' in system["content"]
    assert "$defs" not in system["content"]
    assert "$ref" not in system["content"]


@pytest.mark.parametrize("mode", ["json_object", "json_schema"])
def test_the_model_is_asked_for_its_reading_and_a_quote_placeholder_not_amounts(mode):
    system, _ = build_messages(turn("2 office chairs?"), knowledge(), CONFIG, mode)
    text = system["content"]
    assert "Never write a product's price, a line or a total yourself: put {quote}" in text
    assert "reading {intents:" in text
    assert '"no manager needed": asks_for_human' in text
    assert "only when several items fit equally and the customer named none of them" in text


def test_the_inlined_schema_always_has_the_model_write_its_reading_first():
    schema = inline_schema()
    assert schema["required"][:2] == ["reading", "action"]
    reading = schema["properties"]["reading"]
    assert reading["type"] == "object"  # never null: no branch for a small model to take
    assert reading["required"] == ["intents", "negated", "items"]
    assert "complaint" in reading["properties"]["intents"]["items"]["enum"]
    wanted = reading["properties"]["items"]
    assert wanted["items"]["required"] == ["sku", "qty", "unit"]
    assert wanted["items"]["properties"]["sku"]["maxLength"] == 40
