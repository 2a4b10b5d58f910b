"""The guardrail measured on the corpus of right and wrong replies generated from the golden
businesses' price lists (assistant/eval/guardrail_corpus.py): wrong replies are all blocked,
right ones pass at least 98 % of the time. The figures are in README and docs/guardrails.md."""

from __future__ import annotations

from assistant.eval import guardrail_corpus
from assistant.eval.runner import load_golden

GOLDEN = load_golden()
SAMPLES = guardrail_corpus.generate(GOLDEN)

# Every way of being wrong the trust issue names, each present in the corpus.
WRONG_KINDS = {
    "total", "total_ru", "total_is_a_price", "fee_total", "line_product", "another_items_price",
    "cross_sentence_other_price", "custom_price", "custom_price_ru", "discount_percent",
    "percent_words", "discount_words_en", "discount_words_ru", "discount_words_kk", "deal_ru",
    "deal_kk", "deadline", "deadline_ru", "deadline_agreed", "date", "time", "free_delivery",
    "free_delivery_en", "free_kk", "rounded", "unasked_quantity", "other_quantity",
    "quantity_of_another_item", "list_price_after_agreement",
}  # fmt: skip
RIGHT_KINDS = {
    "single_en", "single_ru", "single_kk", "line_en", "line_ru", "order_en", "order_ru",
    "order_forms", "order_prose", "quantity_total", "fee", "fee_ru", "rule_fee", "manager_price",
    "manager_price_ru", "next_sentence", "customer_named", "quantity_in_history",
    "ru_name_asked_in_en", "by_sku", "options", "discount_refused", "handoff_on_discount",
}  # fmt: skip


def test_the_corpus_is_large_and_covers_every_kind_of_right_and_wrong_reply():
    assert len(SAMPLES) >= 300
    kinds = {(s.right, s.kind) for s in SAMPLES}
    assert {(False, k) for k in WRONG_KINDS} <= kinds
    assert {(True, k) for k in RIGHT_KINDS} <= kinds
    assert {s.business for s in SAMPLES} == set(GOLDEN.knowledge)
    # The amounts are written in the forms people use, not one canonical form.
    replies = "\n".join(s.reply for s in SAMPLES)
    for form in ("k\n", "K.", " тыс. тг", " тысяч тенге", "₸", ".000 тг", ",000 KZT", "млн"):
        assert form in replies


def test_every_wrong_reply_is_blocked_and_right_ones_pass():
    figures = guardrail_corpus.measure(SAMPLES, GOLDEN)
    slipped = [s.id for s, found in figures.misses if not s.right]
    assert figures.wrong_block_rate == 1.0, slipped
    assert figures.right_pass_rate >= 0.98, [(s.id, f) for s, f in figures.misses if s.right]


def test_the_catalogue_assistants_right_golden_replies_are_not_held_back():
    # Judged by the eval's own amount judge, independent of the guardrail: a reply it finds
    # no wrong amount in must reach the customer, not a manager.
    check = guardrail_corpus.against_golden(GOLDEN)
    assert check.clean >= 100
    assert len(check.clean_blocked) <= 0.02 * check.clean, check.clean_blocked
