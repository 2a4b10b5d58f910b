"""Prefix stability: how much of each prompt the model server's prefix cache can reuse.

    .venv/bin/python bench/prefix.py [--chats 80] [--items 300] [--budgets default,8000] [--out F]

A day of traffic for one channel is replayed in time order: `--chats` customers arrive between
09:00 and 21:00, each with one to five turns minutes apart, so turns of different chats
interleave as they do in a real inbox. Every turn goes through the product's prompt builder and
LLM client (`assistant.decision.brain.decide_with`) to the OpenAI-compatible emulator over HTTP, so
the measured requests are the bytes a vLLM server would receive.

For each request: the longest byte-identical prefix shared with the previous request, of the
prompt as a chat template lays it out. `shared_token_share` = sum of shared prefix tokens / sum
of prompt tokens (tokens ≈ UTF-8 bytes / 4, the prompt builder's own estimate); `block_share`
rounds each shared prefix down to vLLM's 16-token blocks. The emulator's own prefix-cache hit
rate (blocks seen in any earlier request, vLLM's rule) is reported beside it.

`--budgets` runs the replay once per LLM_CONTEXT_BUDGET_TOKENS value ("default" = the setting
as configured): when the price list does not fit the budget, the prompt builder moves the
retrieved items for the turn out of the system message, which changes what can be shared.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, fixtures

PHONE_NUMBER_ID = "190000000000004"
CUSTOMER_TURNS = [
    "Hello! How much is the {item}?",
    "Do you have the {item} in stock?",
    "Can you deliver the {item} to {city}?",
    "I want {qty} of the {item}, my name is {name}",
    "What about the {item}, is it cheaper?",
    "ok thanks, and how long is delivery to {city}?",
]
CITIES = ["Almaty", "Astana", "Shymkent", "Karaganda"]
NAMES = ["Aigerim", "Daniyar", "Olga", "Timur", "Madina"]
BLOCK_BYTES = 64  # 16 tokens of ~4 bytes


def day_of_traffic(
    chats: int, item_names: list[str], seed: int = 11
) -> list[tuple[datetime, int, str]]:
    """(time, chat number, customer text) for every turn of the day, in time order."""
    rng = random.Random(seed)
    day = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
    events = []
    for chat in range(chats):
        at = day + timedelta(minutes=rng.uniform(0, 12 * 60))
        for _ in range(rng.randint(1, 5)):
            text = rng.choice(CUSTOMER_TURNS).format(
                item=rng.choice(item_names), city=rng.choice(CITIES), qty=rng.randint(1, 4),
                name=rng.choice(NAMES),
            )  # fmt: skip
            events.append((at, chat, text))
            at += timedelta(minutes=rng.uniform(1, 20))
    return sorted(events)


def shared_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    low, high = 0, n
    while low < high:  # binary search on equal prefixes: fast for long prompts
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def replay(chats: int, budget: int | None, channel_id: int, business_id: int) -> dict[str, Any]:
    from django.conf import settings

    from assistant.decision import brain
    from assistant.knowledge.effective import assistant_settings, knowledge_for_channel
    from assistant.llm.client import LLMClient
    from assistant.schema import HistoryEntry, TurnInput
    from tests.emulators.openai_server import OpenAIEmulator, render_prompt

    original_budget = settings.LLM_CONTEXT_BUDGET_TOKENS
    if budget is not None:
        settings.LLM_CONTEXT_BUDGET_TOKENS = budget
    knowledge = knowledge_for_channel(channel_id)
    config = assistant_settings(business_id)
    list_fits = _list_fits(knowledge)
    events = day_of_traffic(chats, [i.name for i in knowledge.items])
    histories: dict[int, list[HistoryEntry]] = {}
    try:
        with OpenAIEmulator() as llm:
            settings.LLM_BASE_URL = llm.base_url
            settings.LLM_MODEL = "assistant"
            client = LLMClient.from_settings()
            for at, chat, text in events:
                history = histories.setdefault(chat, [])
                turn = TurnInput(
                    business_id=business_id, channel_id=channel_id, chat_id=chat + 1,
                    language="en", history=list(history),
                    pending=[HistoryEntry(speaker="customer", text=text, at=at)],
                    lowest_voice_confidence=None, voice_confidence_threshold=0.6,
                )  # fmt: skip
                result = brain.decide_with(turn, knowledge, config, client)
                history.append(HistoryEntry(speaker="customer", text=text, at=at))
                reply = result.decision.reply_to_customer or "(no reply)"
                history.append(HistoryEntry(speaker="bot", text=reply, at=at))
            prompts = [render_prompt(r.messages).encode() for r in llm.chat_requests]
            salts = {r.cache_salt for r in llm.chat_requests}
            emulator_hit_rate = llm.prefix_cache_hit_rate()
    finally:
        settings.LLM_CONTEXT_BUDGET_TOKENS = original_budget
    total = shared = blocks = 0
    per_request = []
    for n, prompt in enumerate(prompts):
        common_bytes = shared_prefix(prompts[n - 1], prompt) if n else 0
        total += len(prompt)
        shared += common_bytes
        blocks += common_bytes // BLOCK_BYTES * BLOCK_BYTES
        per_request.append(common_bytes / len(prompt))
    return {
        "budget_tokens": budget if budget is not None else original_budget,
        "price_list_items": len(knowledge.items),
        "price_list_in_system_message": list_fits,
        "requests": len(prompts),
        "chats": chats,
        "prompt_tokens_mean": round(total / len(prompts) / 4) if prompts else None,
        "shared_token_share": round(shared / total, 4) if total else None,
        "block_share": round(blocks / total, 4) if total else None,
        "per_request_share_p50": round(common.percentile(per_request, 50) or 0, 4),
        "per_request_share_p05": round(common.percentile(per_request, 5) or 0, 4),
        "emulator_prefix_cache_hit_rate": round(emulator_hit_rate, 4),
        "cache_salts": sorted(s or "" for s in salts),
    }


def _list_fits(knowledge: Any) -> bool:
    from django.conf import settings

    from assistant.llm.prompt import estimate_tokens, render_items

    return estimate_tokens(render_items(knowledge.items)) <= settings.LLM_CONTEXT_BUDGET_TOKENS


def run(args: argparse.Namespace) -> dict[str, Any]:
    common.setup_django()
    if not args.no_migrate:
        common.migrate()
    business = fixtures.business_with_prices("Benchmark furniture", args.items)
    channel = fixtures.cloud_channel(business, PHONE_NUMBER_ID)
    runs = []
    for raw in args.budgets.split(","):
        budget = None if raw.strip() in ("", "default") else int(raw)
        result = replay(args.chats, budget, channel.pk, business.pk)
        result["setting"] = "default" if budget is None else f"LLM_CONTEXT_BUDGET_TOKENS={budget}"
        runs.append(result)
        print(
            f"  {result['setting']:34} list in prefix {result['price_list_in_system_message']!s:5}"
            f"  shared {result['shared_token_share']:.1%}  blocks {result['block_share']:.1%}"
            f"  ~{result['prompt_tokens_mean']} tokens/prompt  {result['requests']} requests",
            flush=True,
        )
    headline = runs[0]
    return {
        "shared_token_share": headline["shared_token_share"],
        "block_share": headline["block_share"],
        "setting": headline["setting"],
        "target": 0.85,
        "runs": runs,
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--chats", type=int, default=80)
    p.add_argument("--items", type=int, default=300)
    p.add_argument("--budgets", default="default,8000", help="comma-separated; first = headline")
    p.add_argument("--no-migrate", action="store_true")
    p.add_argument("--out", type=Path, default=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = run(args)
    if args.out:
        common.write_json(args.out, result)
    print(json.dumps({k: result[k] for k in ("shared_token_share", "block_share", "setting")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
