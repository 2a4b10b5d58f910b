"""Rows the benchmarks need: a business with a realistic price list, channels, chats with history.

The price list is the one the model-server sweep uses (`bench.llm_workload.Workload`, ~300
generated furniture items), imported through the product's own import path.
"""

from __future__ import annotations

import csv
import io
import itertools
import uuid
from datetime import timedelta
from typing import Any

from django.utils import timezone

from bench.llm_workload import Workload


def _id() -> str:
    return uuid.uuid4().hex[:20]


def price_list_csv(items: int) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["SKU", "Name", "Price", "Currency", "Availability"])
    for item in Workload(price_list_items=items).price_list(0):
        writer.writerow([item.sku, item.name, item.price, "KZT", item.stock])
    return out.getvalue().encode()


def business_with_prices(name: str, items: int = 300) -> Any:
    """A business (created once per name) whose current price list has `items` rows."""
    from assistant.knowledge.price_import import apply_price_list, parse_price_file
    from assistant.models import PriceList
    from inbox.conversations.models import Business

    business, _ = Business.objects.get_or_create(name=name)
    current = (
        PriceList.objects.filter(business=business, channel=None)
        .values_list("current_version__item_count", flat=True)
        .first()
    )
    if current != items:
        preview = parse_price_file(price_list_csv(items), "bench-prices.csv", "KZT")
        apply_price_list(preview, business)
    return business


def cloud_channel(business: Any, phone_number_id: str, **fields: Any) -> Any:
    from inbox.conversations.models import Channel

    defaults = {
        "business": business,
        "name": f"Bench {phone_number_id}",
        "kind": Channel.Kind.CLOUD_API,
        "is_active": True,
        "access_token": "bench-token",
        **fields,
    }
    channel, _ = Channel.objects.update_or_create(
        phone_number_id=phone_number_id, defaults=defaults
    )
    return channel


HISTORY = [
    ("customer", "Hello! Do you have office chairs?"),
    ("bot", "Yes, we have several office chairs in stock. Which model are you interested in?"),
    ("customer", "Something ergonomic, black, up to 60 000"),
    ("bot", "The Office chair Ergo 1, black costs 45 500 KZT and is in stock."),
    ("manager", "Hello, manager here: we can also assemble it for you."),
    ("customer", "Great, and delivery to Almaty?"),
]


def chat_with_history(channel: Any, customer_key: str, history: int = 6) -> Any:
    """A BOT-owned chat with `history` answered messages and nothing pending yet."""
    from inbox.conversations.models import Chat, Message

    chat = Chat.objects.create(
        channel=channel,
        customer_key=customer_key,
        customer_phone=customer_key,
        customer_name="Bench customer",
    )
    start = timezone.now() - timedelta(minutes=30)
    last_in = 0
    for n, (speaker, text) in enumerate(itertools.islice(itertools.cycle(HISTORY), history)):
        inbound = speaker == "customer"
        author = {
            "customer": Message.Author.CUSTOMER,
            "bot": Message.Author.BOT,
            "manager": Message.Author.MANAGER,
        }[speaker]
        message = Message.objects.create(
            chat=chat,
            channel=channel,
            direction=Message.Direction.INBOUND if inbound else Message.Direction.OUTBOUND,
            author=author,
            from_me=not inbound,
            sent_by_bot=speaker == "bot",
            text=text,
            provider_message_id=f"wamid.benchhist{_id()}",
            provider_timestamp=start + timedelta(minutes=n),
            status=Message.Status.RECEIVED if inbound else Message.Status.SENT,
        )
        if inbound:
            last_in = message.pk
    Chat.objects.filter(pk=chat.pk).update(answered_up_to=last_in)
    chat.refresh_from_db()
    return chat


def customer_message(chat: Any, text: str) -> Any:
    """A pending customer message, stored as the consumer would (version bumped)."""
    from django.db.models import F

    from inbox.conversations import window
    from inbox.conversations.models import Chat, Message

    now = timezone.now()
    message = Message.objects.create(
        chat=chat,
        channel_id=chat.channel_id,
        direction=Message.Direction.INBOUND,
        author=Message.Author.CUSTOMER,
        text=text,
        provider_message_id=f"wamid.bench{_id()}",
        provider_timestamp=now,
        status=Message.Status.RECEIVED,
    )
    # The consumer opens WhatsApp's 24-hour window with each customer message (Cloud API).
    window_closes_at = window.closes_after(chat.window_closes_at, now, chat.channel.kind)
    Chat.objects.filter(pk=chat.pk).update(
        version=F("version") + 1,
        last_customer_at=now,
        last_message_at=now,
        window_closes_at=window_closes_at,
    )
    return message
