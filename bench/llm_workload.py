"""The assistant's prompt shape, as load for the model server.

Every request starts with the same long prefix per business (the assistant's rules, then a
generated ~300-item price list), token-exact across that business's requests, which is what
vLLM's prefix cache shares; then a varied chat history and a final customer turn. Deterministic:
request i is the same text every run, so the sweep and `vllm bench serve` replay one workload.
"""

from __future__ import annotations

import json
import random
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assistant.schema import Decision

RULES = """You are the sales and support assistant of {shop}, a furniture shop that sells over \
WhatsApp. You answer customers on behalf of the shop, in the customer's language, briefly and \
politely, like a good shop assistant would in a chat.

Rules you always follow:
1. Quote prices, stock and delivery terms only from the price list below. Never invent a price, \
a discount, a delivery date or a product that is not in the list.
2. If the customer asks for a discount, an installment plan, a custom size, a bulk order above \
20 items, a refund, a complaint, or anything the price list does not answer, hand the chat to a \
human manager (action "handoff") with a one-paragraph summary of what the customer wants.
3. If the customer asks to talk to a person, hand off at once.
4. If the request is unclear (which model, which colour, how many, which city), ask one short \
clarifying question (action "clarify").
5. Never promise what a manager must confirm. Say that a manager will confirm it.
6. Collect the facts a manager needs: the customer's name, city, the items and quantities.
7. Delivery: Almaty and Astana within 2-4 working days, other cities 5-9 working days; \
delivery cost is calculated by a manager.
8. Working hours of the managers: Monday to Saturday, 09:00-20:00 (UTC+5). Outside these hours \
say that a manager will answer in the morning.
9. Do not discuss competitors, politics or anything unrelated to the shop's products.
10. Voice messages arrive as transcripts; if a transcript looks garbled, ask the customer to \
repeat in text.

Answer with one JSON object: {{"action": "answer" | "handoff" | "clarify", "reason": short \
reason code, "summary": for the manager, "reply_to_customer": the message to send, "facts": \
{{"name", "city", "items": [{{"name", "qty"}}]}}}}.

Price list of {shop} (SKU | item | price | availability):
"""

_KINDS = [
    ("Office chair", "FC", 38_000, 95_000),
    ("Gaming chair", "GC", 65_000, 140_000),
    ("Desk", "DK", 45_000, 210_000),
    ("Standing desk", "SD", 120_000, 320_000),
    ("Wardrobe", "WR", 90_000, 380_000),
    ("Bookshelf", "BS", 25_000, 110_000),
    ("Sofa", "SF", 180_000, 650_000),
    ("Armchair", "AC", 70_000, 240_000),
    ("Dining table", "DT", 85_000, 300_000),
    ("Dining chair", "DC", 15_000, 60_000),
    ("Bed frame", "BF", 110_000, 420_000),
    ("Mattress", "MT", 60_000, 350_000),
    ("Chest of drawers", "CD", 55_000, 190_000),
    ("TV stand", "TV", 35_000, 140_000),
    ("Coffee table", "CT", 20_000, 95_000),
]
_MODELS = ["Ergo", "Nova", "Loft", "Nord", "Classic", "Milan", "Oslo", "Astra", "Terra", "Vega"]
_FINISH = ["black", "white", "oak", "walnut", "grey fabric", "beige fabric", "green velvet"]
_STOCK = ["in stock", "in stock", "in stock", "2-3 left", "to order, 10-14 days"]
_CITIES = ["Almaty", "Astana", "Shymkent", "Karaganda", "Aktobe", "Pavlodar"]
_NAMES = ["Aigerim", "Daniyar", "Olga", "Timur", "Madina", "Sergey", "Aruzhan", "Nurlan"]

_CUSTOMER = [
    "Hello! Do you have the {item} in {finish}?",
    "How much is the {item}?",
    "Is the {item} available right now? I need {qty}.",
    "Can you deliver the {item} to {city}?",
    "What sizes does the {item} come in?",
    "I saw the {item} on Instagram, is the price still the same?",
    "My name is {name}, I'm in {city}. I want {qty} x {item}.",
    "Can I get a discount if I take {qty} of the {item}?",
    "Please call me back, I want to talk to a manager about the {item}.",
    "How long does delivery to {city} take for the {item}?",
]
_BOT = [
    "The {item} costs {price} KZT and is {stock}. Would you like to order it?",
    "Yes, we deliver to {city}. A manager will calculate the delivery cost. How many do you need?",
    "Which colour do you prefer for the {item}: {finish} or another one?",
    "Thank you, {name}! I have noted {qty} x {item}. A manager will confirm the order.",
]
_MANAGER = [
    "Hello {name}, manager here. I can reserve the {item} for you until tomorrow.",
    "We can offer free assembly for the {item} in {city}.",
]


@dataclass(frozen=True)
class PriceItem:
    sku: str
    name: str
    price: int
    stock: str

    def line(self) -> str:
        return f"{self.sku} | {self.name} | {self.price} KZT | {self.stock}"


@dataclass(frozen=True)
class Workload:
    """The assistant's traffic: `businesses` tenants, each with its own prefix."""

    businesses: int = 1
    price_list_items: int = 300
    max_tokens: int = 256
    seed: int = 7
    response_format: str = "json_schema"  # json_schema | json_object | none
    cache_salt: bool = False

    def price_list(self, business: int) -> list[PriceItem]:
        rng = random.Random(self.seed * 1000 + business)
        items = []
        for n in range(self.price_list_items):
            kind, code, low, high = _KINDS[n % len(_KINDS)]
            model = _MODELS[(n // len(_KINDS)) % len(_MODELS)]
            finish = rng.choice(_FINISH)
            price = rng.randrange(low, high, 500)
            items.append(
                PriceItem(f"{code}{n + 1:03d}", f"{kind} {model} {n + 1}, {finish}", price,
                          rng.choice(_STOCK))
            )  # fmt: skip
        return items

    def system_prompt(self, business: int) -> str:
        """The shared prefix: identical for every request of one business."""
        shop = f"Demo Furniture {business + 1}"
        items = "\n".join(item.line() for item in self.price_list(business))
        return RULES.format(shop=shop) + items + "\n"

    def business_of(self, index: int) -> int:
        return index % self.businesses

    def messages(self, index: int) -> list[dict[str, str]]:
        """Request `index`: the business prefix, 0-8 earlier turns, then the customer's turn."""
        business = self.business_of(index)
        rng = random.Random(self.seed * 7919 + index)
        items = self.price_list(business)
        slots = {
            "name": rng.choice(_NAMES),
            "city": rng.choice(_CITIES),
            "qty": str(rng.randint(1, 6)),
            "finish": rng.choice(_FINISH),
        }

        def fill(template: str) -> str:
            item = rng.choice(items)
            return template.format(item=item.name, price=item.price, stock=item.stock, **slots)

        messages = [{"role": "system", "content": self.system_prompt(business)}]
        for _ in range(rng.randint(0, 4)):
            messages.append({"role": "user", "content": fill(rng.choice(_CUSTOMER))})
            if rng.random() < 0.2:
                # A manager's message as the assistant sees it in the history.
                text = "[manager] " + fill(rng.choice(_MANAGER))
            else:
                text = fill(rng.choice(_BOT))
            messages.append({"role": "assistant", "content": text})
        turn = " ".join(fill(rng.choice(_CUSTOMER)) for _ in range(rng.randint(1, 2)))
        messages.append({"role": "user", "content": turn})
        return messages

    def request_body(self, index: int, model: str, stream: bool = True) -> dict[str, Any]:
        """The chat-completions body the assistant's client sends for request `index`."""
        body: dict[str, Any] = {
            "model": model,
            "messages": self.messages(index),
            "max_tokens": self.max_tokens,
            "temperature": 0.2,
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        if self.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "decision", "schema": Decision.model_json_schema()},
            }
        elif self.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        if self.cache_salt:
            body["cache_salt"] = f"business-{self.business_of(index)}"
        return body

    def flat_prompt(self, index: int) -> str:
        """Request `index` as one text, for `vllm bench serve --dataset-name custom`.

        That dataset sends a single user message, so roles become labelled lines; the shared
        prefix stays first and token-exact, so the prefix cache behaves as it does for the sweep.
        """
        parts = []
        for message in self.messages(index):
            label = {"system": "", "user": "Customer: ", "assistant": "Shop: "}[message["role"]]
            parts.append(label + message["content"])
        return "\n\n".join(parts)


def export_dataset(workload: Workload, path: Path, count: int) -> None:
    """Write `count` requests as the JSONL that `vllm bench serve --dataset-name custom` reads."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for index in range(count):
            row = {"prompt": workload.flat_prompt(index), "output_tokens": workload.max_tokens}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def bench_serve_command(
    *,
    server_root: str,
    model: str,
    tokenizer: str,
    dataset: Path,
    output_len: int,
    concurrency: list[int],
    requests_per_level: int | None,
) -> str:
    """The shell loop that replays the exported dataset with vLLM's own benchmark client."""
    levels = " ".join(str(c) for c in concurrency)
    prompts = str(requests_per_level) if requests_per_level else "$((c * 2 > 8 ? c * 2 : 8))"
    flags = [
        "--backend openai-chat",
        f"--base-url {shlex.quote(server_root)}",
        "--endpoint /v1/chat/completions",
        f"--model {shlex.quote(model)}",
        f"--tokenizer {shlex.quote(tokenizer)}",
        "--dataset-name custom",
        f"--dataset-path {shlex.quote(str(dataset))}",
        # The chat endpoint applies the chat template; the dataset must not apply it twice
        # (vLLM before 0.11 calls this flag --custom-skip-chat-template).
        "--skip-chat-template",
        "--disable-shuffle",
        f"--custom-output-len {output_len}",
        f'--num-prompts "{prompts}"',
        '--max-concurrency "$c"',
        "--request-rate inf",
        "--percentile-metrics ttft,tpot,itl,e2el",
        "--metric-percentiles 50,95",
        "--save-result",
        '--result-filename "bench-c$c.json"',
    ]
    body = " \\\n    ".join(flags)
    return (
        f"for c in {levels}; do\n"
        f'  OPENAI_API_KEY="$LLM_API_KEY" vllm bench serve \\\n    {body}\n'
        "done"
    )
