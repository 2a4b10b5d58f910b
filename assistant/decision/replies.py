"""Fixed customer-facing sentences in the customer's language (English, Russian, Kazakh).

Used by the catalogue assistant, by the fallbacks when no model answers, and for the voice
clarification, in the customer's language (`assistant.language`).
The catalogue assistant recognises its own clarifying questions in the history by these
sentences, so they are data here, not prose scattered through code. A sentence missing in a
language falls back Kazakh → Russian → English (`FALLBACK`).
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
        "kk": "Әрине, сізді менеджерге жалғаймын: ол жақында осында жауап береді.",
    },
    "handoff.ready_to_buy": {
        "en": "Great! A manager will contact you here shortly to complete your order.",
        "ru": "Отлично! Менеджер скоро напишет вам здесь, чтобы оформить заказ.",
        "kk": "Керемет! Тапсырысты рәсімдеу үшін менеджер жақында осында жазады.",
    },
    "handoff.non_standard_terms": {
        "en": "A manager will answer about special terms: they will write to you here shortly.",
        "ru": "По особым условиям вам ответит менеджер: он скоро напишет здесь.",
        "kk": "Арнайы шарттар бойынша менеджер жауап береді: ол жақында осында жазады.",
    },
    "handoff.complaint": {
        "en": "I'm sorry to hear that. I've passed your message to a manager, who will reply "
        "here shortly.",
        "ru": "Нам очень жаль. Я передал ваше сообщение менеджеру, он скоро ответит здесь.",
        "kk": "Кешіріңіз, бұлай болғанына өкінеміз. Хабарламаңызды менеджерге жібердім, ол "
        "жақында осында жауап береді.",
    },
    "handoff.outside_knowledge_base": {
        "en": "I can't answer that from our price list, so I've passed your question to a "
        "manager, who will reply here shortly.",
        "ru": "На этот вопрос я не могу ответить по прайс-листу, поэтому передал его менеджеру: "
        "он скоро ответит здесь.",
        "kk": "Бұл сұраққа прайс-лист бойынша жауап бере алмаймын, сондықтан оны "
        "менеджерге жібердім: ол жақында осында жауап береді.",
    },
    "handoff.voice_unclear": {
        "en": "Sorry, I still couldn't make out your voice message. A manager will listen to it "
        "and reply here shortly.",
        "ru": "Извините, голосовое сообщение снова не удалось разобрать. Менеджер прослушает его "
        "и скоро ответит здесь.",
        "kk": "Кешіріңіз, дауыстық хабарламаңызды тағы да түсіне алмадым. Менеджер оны "
        "тыңдап, жақында осында жауап береді.",
    },
    "handoff.voice_failed": {
        "en": "Sorry, I couldn't listen to your voice message. A manager will get back to you "
        "here shortly.",
        "ru": "Извините, не удалось прослушать ваше голосовое сообщение. Менеджер скоро ответит "
        "вам здесь.",
        "kk": "Кешіріңіз, дауыстық хабарламаңызды тыңдай алмадым. Менеджер жақында осында "
        "жауап береді.",
    },
    "handoff.model_misconfigured": {
        "en": "Thank you for your message! Our assistant can't answer right now, so a manager "
        "will reply to you here shortly.",
        "ru": "Спасибо за сообщение! Наш помощник сейчас не может ответить, поэтому вам скоро "
        "ответит менеджер здесь.",
        "kk": "Хабарламаңызға рахмет! Көмекшіміз қазір жауап бере алмайды, сондықтан "
        "менеджер жақында осында жауап береді.",
    },
    "handoff.approval_timeout": {
        "en": "Thank you for waiting! A manager will confirm the details and reply here shortly.",
        "ru": "Спасибо за ожидание! Менеджер уточнит детали и скоро ответит вам здесь.",
        "kk": "Күткеніңізге рахмет! Менеджер мәліметтерді нақтылап, жақында осында жауап береді.",
    },
    "handoff.default": {
        "en": "Thank you for your message! A manager will reply to you here shortly.",
        "ru": "Спасибо за сообщение! Менеджер скоро ответит вам здесь.",
        "kk": "Хабарламаңызға рахмет! Менеджер жақында осында жазады.",
    },
    "clarify.voice": {
        "en": "Sorry, I couldn't quite make out your voice message. Could you repeat it or type "
        "it, please?",
        "ru": "Извините, не удалось разобрать голосовое сообщение. Повторите, пожалуйста, или "
        "напишите текстом.",
        "kk": "Кешіріңіз, дауыстық хабарламаңызды түсіне алмадым. Қайталап айтыңызшы немесе "
        "мәтінмен жазыңызшы.",
    },
    "clarify.miss": {
        "en": "I can help with prices and availability from our price list. Which product are "
        "you interested in?",
        "ru": "Я могу подсказать цены и наличие по нашему прайс-листу. Какой товар вас интересует?",
        "kk": "Прайс-листіміз бойынша бағасы мен бар-жоғын айтып бере аламын. Сізді қандай "
        "тауар қызықтырады?",
    },
    "clarify.ambiguous": {
        "en": "Which one do you mean: {options}?",
        "ru": "Уточните, пожалуйста, какой именно: {options}?",
        "kk": "Нақтылаңызшы, қайсысы керек: {options}?",
    },
    "answer.greeting": {
        "en": "Hello! I can tell you prices and availability from our price list. What are you "
        "looking for?",
        "ru": "Здравствуйте! Подскажу цены и наличие по нашему прайс-листу. Что вас интересует?",
        "kk": "Сәлеметсіз бе! Прайс-листіміз бойынша бағасы мен бар-жоғын айтып беремін. "
        "Сізді не қызықтырады?",
    },
    "answer.thanks": {
        "en": "You're welcome! Anything else I can help with?",
        "ru": "Пожалуйста! Чем ещё могу помочь?",
        "kk": "Әрдайым қызметіңіздеміз! Тағы немен көмектесе аламын?",
    },
    "answer.total": {"en": "Total: {total}", "ru": "Итого: {total}", "kk": "Жалпы: {total}"},
    # "{share}" is the rate and the amount: "10%: 75 600 KZT".
    "answer.discount": {
        "en": "with the discount of {share}",
        "ru": "со скидкой {share}",
        "kk": "жеңілдікпен {share}",
    },
    "answer.surcharge": {
        "en": "with the surcharge of {share}",
        "ru": "с надбавкой {share}",
        "kk": "үстеме ақымен {share}",
    },
    "answer.prepayment": {
        "en": "Prepayment {share}",
        "ru": "Предоплата {share}",
        "kk": "Алдын ала төлем {share}",
    },
    "charge.delivery": {"en": "Delivery", "ru": "Доставка", "kk": "Жеткізу"},
    "charge.assembly": {"en": "Assembly", "ru": "Сборка", "kk": "Құрастыру"},
    "charge.installation": {"en": "Installation", "ru": "Установка", "kk": "Орнату"},
    "charge.lifting": {"en": "Carrying upstairs", "ru": "Подъём", "kk": "Қабатқа көтеру"},
    "charge.default": {"en": "Service", "ru": "Услуга", "kk": "Қызмет"},
    # A child's line of a price per person: "ребёнок, возраст 8".
    "answer.child": {
        "en": "child, age {age}",
        "ru": "ребёнок, возраст {age}",
        "kk": "бала, {age} жаста",
    },
    "charge.free": {"en": "free", "ru": "бесплатно", "kk": "тегін"},
    # Parts of an order the list does not name: no total is given without them.
    "answer.unread": {
        "en": "Not found in our price list: {parts}. Without it there is no total, so here "
        "is each price on its own.",
        "ru": "Не нашёл в прайс-листе: {parts}. Без этого итог не посчитать, поэтому цены "
        "по отдельности.",
        "kk": "Прайс-листтен таппадым: {parts}. Онсыз жалпы соманы есептей алмаймын, сондықтан "
        "бағалар бөлек.",
    },
    # A quantity raised to the least the list sells ("Минимум 2 часа").
    "answer.minimum": {
        "en": "the minimum is {least}",
        "ru": "минимальный заказ — {least}",
        "kk": "ең аз тапсырыс — {least}",
    },
    "answer.agreed": {
        "en": "as agreed with the manager",
        "ru": "как договорились с менеджером",
        "kk": "менеджермен келісілгендей",
    },
    "answer.more": {"en": "and {count} more", "ru": "и ещё {count}", "kk": "тағы {count}"},
    "availability.in_stock": {"en": "in stock", "ru": "в наличии", "kk": "қоймада бар"},
    "availability.out_of_stock": {"en": "out of stock", "ru": "нет в наличии", "kk": "қоймада жоқ"},
    "availability.on_order": {"en": "on order", "ru": "под заказ", "kk": "тапсырыспен"},
    "availability.unknown": {"en": "", "ru": "", "kk": ""},
    "word.or": {"en": "or", "ru": "или", "kk": "немесе"},
}


# What a price list's availability cell may say that only repeats the status ("под заказ" for
# on order): left out of the note so the customer never reads "(on order, on order)".
RESTATED: dict[str, tuple[str, ...]] = {
    Availability.IN_STOCK: ("in stock", "instock", "в наличии", "есть", "имеется", "available",
                            "yes", "да", "бар", "қоймада бар", "+"),
    Availability.OUT_OF_STOCK: ("out of stock", "нет в наличии", "sold out", "отсутствует",
                                "нет", "no", "жоқ", "қоймада жоқ", "-"),
    Availability.ON_ORDER: ("on order", "to order", "under order", "pre-order", "preorder",
                            "backorder", "под заказ", "на заказ", "заказ", "order",
                            "тапсырыспен", "тапсырыс бойынша"),
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


# The languages to try, in order, for a sentence a language lacks.
FALLBACK: dict[str, tuple[str, ...]] = {"kk": ("kk", "ru", "en"), "ru": ("ru", "en"), "en": ("en",)}


def text(key: str, lang: str, **kwargs: str) -> str:
    """The fixed sentence in `lang` ("kk", "ru-RU"…), else in the nearest language it exists in."""
    variants = TEXTS[key]
    order = FALLBACK[language.supported(lang)]
    template = next((variants[code] for code in order if code in variants), variants["en"])
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
