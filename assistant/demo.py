"""Demo data for `make run`: a small furniture price list and assistant settings.

The list is named in English with Russian names as aliases, and the rules are written in both
languages: the demo shop speaks Russian (`seed_demo`), and an English-speaking customer still
reads English names and sentences."""

from __future__ import annotations

from pathlib import Path

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import AssistantSettings, PriceList
from inbox.conversations.models import Business

DEMO_PRICE_LIST = Path(__file__).resolve().parent / "data" / "demo_price_list.csv"
DEMO_RULES = (
    "Delivery within Almaty the next working day, 5 000 KZT per order; to other cities of "
    "Kazakhstan 3-7 working days, 15 000 KZT. Assembly 8 000 KZT per item. "
    "Open daily 10:00-20:00. Payment by card, Kaspi transfer or cash on delivery.\n"
    "Доставка по Алматы на следующий рабочий день — 5 000 тг за заказ; в другие города "
    "Казахстана 3-7 рабочих дней — 15 000 тг. Сборка — 8 000 тг за каждое изделие. "
    "Работаем ежедневно с 10:00 до 20:00. Оплата картой, переводом Kaspi или наличными при "
    "доставке."
)


def ensure_demo_assistant(business: Business) -> bool:
    """Give the demo business a price list and settings unless it has them. True if created."""
    AssistantSettings.objects.get_or_create(
        business=business, defaults={"business_rules": DEMO_RULES}
    )
    if PriceList.objects.filter(business=business, channel=None).exists():
        return False
    preview = parse_price_file(DEMO_PRICE_LIST.read_bytes(), DEMO_PRICE_LIST.name)
    apply_price_list(preview, business)
    return True
