"""Turns and price lists for assistant tests: plain values, no database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.models import Availability
from assistant.schema import HistoryEntry, TurnInput

T0 = datetime(2025, 3, 1, 10, 0, tzinfo=UTC)


def item(sku: str, name: str, price: str, currency: str = "KZT", **kwargs: str) -> KnowledgeItem:
    return KnowledgeItem(sku=sku, name=name, price=Decimal(price), currency=currency, **kwargs)


FURNITURE = (
    item("CH-101", "Office chair Lux", "45000", availability=Availability.IN_STOCK),
    item("CH-102", "Kitchen chair Oak", "28000", availability=Availability.IN_STOCK),
    item("TB-201", "Oak dining table 160", "120000", availability=Availability.ON_ORDER,
         availability_note="2 weeks"),
    item("TB-202", "Oak dining table 200", "150000", availability=Availability.IN_STOCK),
    item("SF-301", "Sofa Milano 3-seat", "310000", availability=Availability.OUT_OF_STOCK),
    item("ST-11", "Стул барный Лофт", "32000", availability=Availability.IN_STOCK),
    item("KR-12", "Кресло офисное Комфорт", "54000", availability=Availability.IN_STOCK),
)  # fmt: skip


def knowledge(items: tuple[KnowledgeItem, ...] = FURNITURE, business_id: int = 1) -> Knowledge:
    return Knowledge(
        business_id=business_id,
        business_name="Mebel Plus",
        channel_id=1,
        items=items,
        version="test",
    )


def entry(speaker: str, text: str, minutes: int = 0, confidence: float | None = None):
    return HistoryEntry(
        speaker=speaker,  # type: ignore[arg-type]
        text=text,
        at=T0 + timedelta(minutes=minutes),
        voice_confidence=confidence,
    )


def turn(
    *messages: str,
    history: list[HistoryEntry] | None = None,
    confidence: float | None = None,
    chat_id: int = 1,
    business_id: int = 1,
    channel_id: int = 1,
    language: str = "",
) -> TurnInput:
    history = history or []
    start = len(history) + 1
    return TurnInput(
        business_id=business_id,
        channel_id=channel_id,
        chat_id=chat_id,
        language=language,
        history=history,
        pending=[entry("customer", m, start + i, confidence) for i, m in enumerate(messages)],
        lowest_voice_confidence=confidence,
        voice_confidence_threshold=0.6,
    )
