"""The chat messages for one turn, from versioned template files (assistant/prompts/<version>/).

Fixed content first, variable content last, so vLLM's prefix cache is shared by every chat of a
channel: the system message holds the rules, the business rules and handoff reasons, and the
price list; the user message holds the conversation and this turn. The whole system message is
the stable prefix: for two chats of one channel it is byte-identical (nothing in it depends on
the chat, the time or the customer).

When the price list does not fit LLM_CONTEXT_BUDGET_TOKENS, the system message says so and the
items for this turn (BM25 retrieval over name, SKU and description, plus exact SKU and full-name
mentions) go at the top of the user message instead.
"""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from string import Template

from django.conf import settings

from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.knowledge.matching import compact, normalise
from assistant.models import AssistantSettings
from assistant.schema import Decision, HistoryEntry, TurnInput

PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"
Message = dict[str, str]
MAX_MESSAGE_CHARS = 1500
SPEAKERS = {
    "customer": "Customer",
    "bot": "Assistant (you)",
    "manager": "Manager",
    "system": "System",
}


@cache
def template(version: str, name: str) -> Template:
    path = PROMPTS_DIR / version / f"{name}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template {version}/{name}.txt")
    return Template(path.read_text(encoding="utf-8"))


def estimate_tokens(text: str) -> int:
    """Roughly what a BPE tokenizer makes of it: UTF-8 bytes / 4 (Cyrillic costs double)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def build_messages(
    turn: TurnInput,
    knowledge: Knowledge,
    settings_row: AssistantSettings,
    structured_output: str | None = None,
) -> list[Message]:
    """[system, user] messages for one turn. `structured_output` ("json_schema" or
    "json_object", default LLM_STRUCTURED_OUTPUT): json_object puts the JSON schema in the
    system prompt, for servers that do not enforce a schema themselves."""
    version = settings_row.prompt_version or "v1"
    mode = structured_output or settings.LLM_STRUCTURED_OUTPUT
    items_text = render_items(knowledge.items)
    fits = estimate_tokens(items_text) <= settings.LLM_CONTEXT_BUDGET_TOKENS
    system = system_prompt(knowledge, settings_row, mode, items_text if fits else None)
    retrieved = ""
    if not fits:
        chosen = retrieve_items(turn, knowledge)
        retrieved = template(version, "retrieved_items").substitute(
            shown=len(chosen),
            item_count=len(knowledge.items),
            items=render_items(chosen) or "(none)",
        )
    user = template(version, "conversation").substitute(
        retrieved=retrieved,
        history=render_history(turn.history) or "(no earlier messages)",
        pending=render_history(turn.pending),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def system_prompt(
    knowledge: Knowledge,
    settings_row: AssistantSettings,
    structured_output: str,
    items_text: str | None,
) -> str:
    version = settings_row.prompt_version or "v1"
    if structured_output == "json_object":
        schema = json.dumps(Decision.model_json_schema(), ensure_ascii=False, sort_keys=True)
        output = template(version, "output_json_object").substitute(schema=schema)
    else:
        output = template(version, "output_json_schema").substitute()
    reasons = "\n".join(
        f"- {r['code']}: {r['description']}".rstrip(": ") for r in settings_row.reasons()
    )
    parts = [
        template(version, "system").substitute(
            business_name=knowledge.business_name, output_format=output.strip()
        ),
        template(version, "business").substitute(
            business_rules=(settings_row.business_rules or "").strip() or "(none)",
            handoff_reasons=reasons or "(none: answer or clarify only)",
        ),
    ]
    if items_text is not None:
        parts.append(
            template(version, "price_list").substitute(
                item_count=len(knowledge.items), items=items_text or "(empty)"
            )
        )
    else:
        parts.append(
            template(version, "price_list_retrieved_note").substitute(
                item_count=len(knowledge.items)
            )
        )
    return "".join(parts).rstrip() + "\n"


def stable_prefix_chars(messages: list[Message]) -> int:
    """Characters at the start of the prompt shared by every chat of the channel (the system
    message), for the prefix-cache benchmark."""
    return len(messages[0]["content"]) if messages and messages[0]["role"] == "system" else 0


def render_items(items: tuple[KnowledgeItem, ...] | list[KnowledgeItem]) -> str:
    lines = []
    for item in items:
        parts = [f"- {item.sku + ' | ' if item.sku else ''}{item.name} | {item.price_text()}"]
        parts.append(item.availability_text())
        if item.description:
            parts.append(" ".join(item.description.split())[:200])
        lines.append(" | ".join(parts))
    return "\n".join(lines)


def render_history(entries: list[HistoryEntry]) -> str:
    limit = settings.LLM_HISTORY_MESSAGES
    shown = entries[-limit:] if limit > 0 else entries
    lines = []
    for entry in shown:
        who = SPEAKERS.get(entry.speaker, entry.speaker)
        if entry.voice_confidence is not None:
            who += f" (voice note, transcript confidence {entry.voice_confidence:.2f})"
        text = " ".join(entry.text.split())
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[:MAX_MESSAGE_CHARS] + "…"
        lines.append(f"[{entry.at:%Y-%m-%d %H:%M}] {who}: {text}")
    return "\n".join(lines)


def retrieve_items(turn: TurnInput, knowledge: Knowledge) -> list[KnowledgeItem]:
    """Items for this turn when the list is too long: exact SKU and full-name mentions first,
    then BM25 over the customer's recent words, within the context budget."""
    recent = [e.text for e in turn.history[-6:] if e.speaker == "customer"]
    query = " ".join([*recent, *(e.text for e in turn.pending)])
    normalised = normalise(query)
    compacted = compact(query)
    exact = [
        i
        for i, item in enumerate(knowledge.items)
        if (item.sku and len(compact(item.sku)) >= 3 and compact(item.sku) in compacted)
        or (len(item.name) >= 4 and normalise(item.name) in normalised)
    ]
    ranked = knowledge.catalogue.retrieve(query, settings.LLM_RETRIEVAL_ITEMS)
    chosen: list[int] = []
    budget = settings.LLM_CONTEXT_BUDGET_TOKENS
    for index in [*exact, *ranked]:
        if index in chosen:
            continue
        cost = estimate_tokens(render_items([knowledge.items[index]]))
        if budget - cost < 0 and chosen:
            break
        budget -= cost
        chosen.append(index)
    return [knowledge.items[i] for i in sorted(chosen)]


def repair_message(version: str, error: str) -> Message:
    return {
        "role": "user",
        "content": template(version or "v1", "repair").substitute(error=error[:500]),
    }
