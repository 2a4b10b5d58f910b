"""Fixed customer-facing sentences in the customer's language (English and Russian).

Used by the catalogue assistant, by the fallbacks when no model answers, and for the voice
clarification, in the customer's language (`assistant.language`).
The catalogue assistant recognises its own clarifying questions in the history by these
sentences, so they are data here, not prose scattered through code.
"""

from __future__ import annotations

import re

from assistant import language
from assistant.models import Availability
from assistant.schema import TurnInput

TEXTS: dict[str, dict[str, str]] = {
    "handoff.asks_for_human": {
        "en": "Of course, I'm passing you to a manager: they will reply here shortly.",
        "ru": "Конечно, передаю вас менеджеру: он ответит здесь в ближайшее время.",
    },
    "handoff.ready_to_buy": {
        "en": "Great! A manager will contact you here shortly to complete your order.",
        "ru": "Отлично! Менеджер скоро напишет вам здесь, чтобы оформить заказ.",
    },
    "handoff.non_standard_terms": {
        "en": "A manager will answer about special terms: they will write to you here shortly.",
        "ru": "По особым условиям вам ответит менеджер: он скоро напишет здесь.",
    },
    "handoff.complaint": {
        "en": "I'm sorry to hear that. I've passed your message to a manager, who will reply "
        "here shortly.",
        "ru": "Нам очень жаль. Я передал ваше сообщение менеджеру, он скоро ответит здесь.",
    },
    "handoff.outside_knowledge_base": {
        "en": "I can't answer that from our price list, so I've passed your question to a "
        "manager, who will reply here shortly.",
        "ru": "На этот вопрос я не могу ответить по прайс-листу, поэтому передал его менеджеру: "
        "он скоро ответит здесь.",
    },
    "handoff.voice_unclear": {
        "en": "Sorry, I still couldn't make out your voice message. A manager will listen to it "
        "and reply here shortly.",
        "ru": "Извините, голосовое сообщение снова не удалось разобрать. Менеджер прослушает его "
        "и скоро ответит здесь.",
    },
    "handoff.voice_failed": {
        "en": "Sorry, I couldn't listen to your voice message. A manager will get back to you "
        "here shortly.",
        "ru": "Извините, не удалось прослушать ваше голосовое сообщение. Менеджер скоро ответит "
        "вам здесь.",
    },
    "handoff.model_misconfigured": {
        "en": "Thank you for your message! Our assistant can't answer right now, so a manager "
        "will reply to you here shortly.",
        "ru": "Спасибо за сообщение! Наш помощник сейчас не может ответить, поэтому вам скоро "
        "ответит менеджер здесь.",
    },
    "handoff.approval_timeout": {
        "en": "Thank you for waiting! A manager will confirm the details and reply here shortly.",
        "ru": "Спасибо за ожидание! Менеджер уточнит детали и скоро ответит вам здесь.",
    },
    "handoff.default": {
        "en": "Thank you for your message! A manager will reply to you here shortly.",
        "ru": "Спасибо за сообщение! Менеджер скоро ответит вам здесь.",
    },
    "clarify.voice": {
        "en": "Sorry, I couldn't quite make out your voice message. Could you repeat it or type "
        "it, please?",
        "ru": "Извините, не удалось разобрать голосовое сообщение. Повторите, пожалуйста, или "
        "напишите текстом.",
    },
    "clarify.miss": {
        "en": "I can help with prices and availability from our price list. Which product are "
        "you interested in?",
        "ru": "Я могу подсказать цены и наличие по нашему прайс-листу. Какой товар вас интересует?",
    },
    "clarify.ambiguous": {
        "en": "Which one do you mean: {options}?",
        "ru": "Уточните, пожалуйста, какой именно: {options}?",
    },
    "answer.greeting": {
        "en": "Hello! I can tell you prices and availability from our price list. What are you "
        "looking for?",
        "ru": "Здравствуйте! Подскажу цены и наличие по нашему прайс-листу. Что вас интересует?",
    },
    "answer.thanks": {
        "en": "You're welcome! Anything else I can help with?",
        "ru": "Пожалуйста! Чем ещё могу помочь?",
    },
    "answer.total": {"en": "Total: {total}", "ru": "Итого: {total}"},
    # "{share}" is the rate and the amount: "10%: 75 600 KZT".
    "answer.discount": {"en": "with the discount of {share}", "ru": "со скидкой {share}"},
    "answer.surcharge": {"en": "with the surcharge of {share}", "ru": "с надбавкой {share}"},
    "answer.prepayment": {"en": "Prepayment {share}", "ru": "Предоплата {share}"},
    "charge.delivery": {"en": "Delivery", "ru": "Доставка"},
    "charge.assembly": {"en": "Assembly", "ru": "Сборка"},
    "charge.installation": {"en": "Installation", "ru": "Установка"},
    "charge.lifting": {"en": "Carrying upstairs", "ru": "Подъём"},
    "charge.default": {"en": "Service", "ru": "Услуга"},
    "charge.free": {"en": "free", "ru": "бесплатно"},
    "answer.agreed": {"en": "as agreed with the manager", "ru": "как договорились с менеджером"},
    "answer.more": {"en": "and {count} more", "ru": "и ещё {count}"},
    "availability.in_stock": {"en": "in stock", "ru": "в наличии"},
    "availability.out_of_stock": {"en": "out of stock", "ru": "нет в наличии"},
    "availability.on_order": {"en": "on order", "ru": "под заказ"},
    "availability.unknown": {"en": "", "ru": ""},
    "word.or": {"en": "or", "ru": "или"},
}


# What a price list's availability cell may say that only repeats the status ("под заказ" for
# on order): left out of the note so the customer never reads "(on order, on order)".
RESTATED: dict[str, tuple[str, ...]] = {
    Availability.IN_STOCK: ("in stock", "instock", "в наличии", "есть", "имеется", "available",
                            "yes", "да", "бар", "+"),
    Availability.OUT_OF_STOCK: ("out of stock", "нет в наличии", "sold out", "отсутствует",
                                "нет", "no", "жоқ", "-"),
    Availability.ON_ORDER: ("on order", "to order", "under order", "pre-order", "preorder",
                            "backorder", "под заказ", "на заказ", "заказ", "order",
                            "тапсырыспен"),
}  # fmt: skip


def availability_phrase(status: str, note: str, lang: str) -> str:
    """ "on order, 2 weeks": the status in the customer's language and what the note adds to
    it (nothing when the note only repeats the status)."""
    label = text(f"availability.{Availability(status).value}", lang) if status else ""
    rest = note.strip()
    for phrase in sorted(RESTATED.get(status, ()), key=len, reverse=True):
        rest = re.sub(rf"(?<!\w){re.escape(phrase)}(?!\w)", " ", rest, flags=re.IGNORECASE)
    rest = " ".join(rest.split()).strip(" ,;:.-–—()")
    if label and rest and rest.lower() != label.lower():
        return f"{label}, {rest}"
    return label or rest


def language_for(turn: TurnInput) -> str:
    """The customer's language this turn (`assistant.language`)."""
    return language.customer_language((entry.text for entry in turn.pending), turn.language)


def text(key: str, lang: str, **kwargs: str) -> str:
    variants = TEXTS[key]
    template = variants.get(lang) or variants["en"]
    return template.format(**kwargs) if kwargs else template


def handoff_message(reason: str, lang: str) -> str:
    key = f"handoff.{reason}"
    return text(key if key in TEXTS else "handoff.default", lang)


def is_text(candidate: str, key: str) -> bool:
    """Whether a bot message of the history is this fixed sentence (in any language)."""
    stripped = candidate.strip()
    for template in TEXTS[key].values():
        head = template.split("{", 1)[0].strip()
        if head and stripped.startswith(head):
            return True
    return False
