"""The chat messages for one turn, from versioned template files (assistant/prompts/<version>/).

Fixed content first, variable content last, so vLLM's prefix cache is shared by every chat of a
channel: the system message holds the rules, the business rules and handoff reasons, and the
price list; the user message holds the conversation and this turn. The whole system message is
the stable prefix: for two chats of one channel it is byte-identical (nothing in it depends on
the chat, the time or the customer).

When the price list does not fit LLM_CONTEXT_BUDGET_TOKENS, the system message says so and the
items for this turn (BM25 retrieval over name, SKU and description, plus exact SKU and full-name
mentions) go at the top of the user message instead. `compact=True` (the client asks for it when
the server says the prompt is over the model's context) always retrieves, within a quarter of
the budget, and shows fewer earlier messages.

What a manager agreed with this customer in this chat (`assistant.knowledge.agreements`: item,
agreed unit price, quantity, the manager's words) opens the user message as binding facts that
override the price list, read from the whole history, so they hold even after the messages
themselves have scrolled out of the shown history.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from string import Template
from typing import Any, cast

from django.conf import settings

from assistant.knowledge.agreements import Agreement, agreements, manager_statements
from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.knowledge.matching import compact as compact_text
from assistant.knowledge.matching import normalise
from assistant.knowledge.money import format_money
from assistant.models import AssistantSettings
from assistant.schema import Decision, HistoryEntry, TurnInput

PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"
Message = dict[str, str]
MAX_MESSAGE_CHARS = 1500
COMPACT_HISTORY_MESSAGES = 8
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
    compact: bool = False,
) -> list[Message]:
    """[system, user] messages for one turn. `structured_output` ("json_schema" or
    "json_object", default LLM_STRUCTURED_OUTPUT): json_object puts the JSON schema in the
    system prompt, for servers that do not enforce a schema themselves. `compact`: the smaller
    prompt for a model whose context the full one overflowed."""
    version = settings_row.prompt_version or "v1"
    mode = structured_output or settings.LLM_STRUCTURED_OUTPUT
    budget = settings.LLM_CONTEXT_BUDGET_TOKENS // (4 if compact else 1)
    agreed = agreements(turn.history, knowledge)
    items_text = render_items(knowledge.items)
    fits = not compact and estimate_tokens(items_text) <= budget
    system = system_prompt(knowledge, settings_row, mode, items_text if fits else None)
    retrieved = ""
    if not fits:
        chosen = retrieve_items(
            turn, knowledge, budget=budget, must=[a.item_index for a in agreed], compact=compact
        )
        retrieved = template(version, "retrieved_items").substitute(
            shown=len(chosen),
            item_count=len(knowledge.items),
            items=render_items(chosen) or "(none)",
        )
        if compact and estimate_tokens(items_text) <= estimate_tokens(retrieved):
            # A short list: the whole of it is no bigger than what retrieval picked.
            system = system_prompt(knowledge, settings_row, mode, items_text)
            retrieved = ""
    history_limit = settings.LLM_HISTORY_MESSAGES
    if compact:
        history_limit = min(history_limit or COMPACT_HISTORY_MESSAGES, COMPACT_HISTORY_MESSAGES)
    user = template(version, "conversation").substitute(
        retrieved=render_agreements(version, agreed, knowledge, manager_statements(turn.history))
        + retrieved,
        history=render_history(turn.history, history_limit) or "(no earlier messages)",
        pending=render_history(turn.pending, 0),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


MAX_MANAGER_TERMS = 8  # the latest sentences of a manager without a price, shown as terms


def render_agreements(
    version: str, agreed: list[Agreement], knowledge: Knowledge, statements: Sequence[str] = ()
) -> str:
    """The manager's agreements as binding facts ("" when there are none): per item (and
    quantity it was given for) only the latest holds; the manager's own words go with each,
    so the model sees what was said. A manager's other sentences (a delivery day, free assembly)
    follow in their own words, the latest few."""
    latest: dict[tuple[int | None, int | None], Agreement] = {}
    for agreement in agreed:
        key = (agreement.item_index, agreement.quantity)
        latest.pop(key, None)  # a later agreement replaces an earlier one
        latest[key] = agreement
    lines = []
    for (index, _quantity), agreement in latest.items():
        words = " ".join(agreement.words.split())[:300]
        if index is None:
            lines.append(f'- the manager wrote: "{words}"')
            continue
        item = knowledge.items[index]
        price = format_money(agreement.unit_price, agreement.amount.currency or item.currency)
        quantity = f" (for {agreement.quantity} units)" if agreement.quantity else ""
        lines.append(
            f"- {item.name}: {price} per unit{quantity} instead of the list's "
            f'{item.price_text()}; the manager wrote: "{words}"'
        )
    # What else a manager promised (a date, free delivery, a term), in their words.
    priced = {" ".join(a.words.split()) for a in agreed}
    terms = [" ".join(s.split())[:300] for s in statements if " ".join(s.split()) not in priced]
    lines += [f'- the manager wrote: "{words}"' for words in terms[-MAX_MANAGER_TERMS:]]
    if not lines:
        return ""
    return _template_or_v1(version, "agreements").substitute(agreements="\n".join(lines))


def _template_or_v1(version: str, name: str) -> Template:
    """A template the version may not have yet: the v1 one then."""
    try:
        return template(version, name)
    except FileNotFoundError:
        return template("v1", name)


# Length caps for the grammar (characters): llama.cpp expands a maxLength into nested optional
# rules and refuses a grammar past ~1000; these also stop a small model rambling inside a string
# until max_tokens. pydantic's own limits (assistant/schema.py) are looser and still apply.
GRAMMAR_MAX_LENGTH = {"reason": 48, "summary": 240, "reply_to_customer": 500, "name": 100,
                      "city": 60, "sku": 40, "unit": 20}  # fmt: skip
GRAMMAR_MAX_ITEMS = {"items": 4, "intents": 3, "negated": 2}  # facts.items, reading.items, …
# Properties in the order the model writes them: first what it read (the intents, then the
# items), then the action and the reply right after it.
GRAMMAR_ORDER = ("reading", "intents", "negated", "action", "reply_to_customer", "reason",
                 "summary", "facts")  # fmt: skip
# Optional objects the grammar always asks for (a small model never has to choose null).
GRAMMAR_ALWAYS = ("reading",)


def inline_schema() -> dict[str, Any]:
    """The Decision schema as llama.cpp's grammar converter applies it: `$ref`s inlined (no
    `$defs`), every property required in one fixed order (no optional branches for a small
    model to wander into), `additionalProperties: false`, no titles or defaults, and string
    lengths and the lists capped (GRAMMAR_MAX_LENGTH, GRAMMAR_MAX_ITEMS), so a whole
    answer fits in LLM_MAX_TOKENS, `reason` a snake_case code (the 135M model otherwise
    writes a sentence there), and the `reading` always written (never null).

    Why: llama-cpp-python 0.3.x turns `response_format.schema` into GBNF with its own
    converter. For pydantic's schema (Facts has `additionalProperties: true`) the rule after
    Facts' last property demands one more key with no comma before it, so no Decision with
    facts can be written and sampling drifts (a stray quote, a code fence, newlines until
    max_tokens); a `maxLength` of 2000 or more makes a grammar llama.cpp refuses to parse
    ("failed to parse grammar"), which fails the request. vLLM gets the pydantic schema as it
    is (json_schema: its guided decoding resolves `$defs`)."""
    root = Decision.model_json_schema()
    defs = root.get("$defs", {})

    def inline(node: Any, name: str = "") -> Any:
        if isinstance(node, list):
            return [inline(v, name) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            return inline(defs[node["$ref"].split("/")[-1]], name)
        if name in GRAMMAR_ALWAYS and "anyOf" in node:
            (written,) = [o for o in node["anyOf"] if o.get("type") != "null"]
            return inline(written, name)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("$defs", "title", "default", "description", "maxLength", "minLength"):
                continue
            if key == "properties":
                out[key] = {k: inline(v, k) for k, v in value.items()}
            else:
                out[key] = inline(value, name)
        if out.get("type") == "string" and name == "reason":
            # A code (asks_for_human, ambiguous, …) or "", never a sentence.
            out["pattern"] = f"^[a-z_]{{0,{GRAMMAR_MAX_LENGTH['reason']}}}$"
        elif out.get("type") == "string" and name in GRAMMAR_MAX_LENGTH:
            out["maxLength"] = GRAMMAR_MAX_LENGTH[name]
        if out.get("type") == "array" and name in GRAMMAR_MAX_ITEMS:
            out["maxItems"] = GRAMMAR_MAX_ITEMS[name]
        if out.get("type") == "object" and "properties" in out:
            props = out["properties"]
            ordered = [k for k in GRAMMAR_ORDER if k in props] + [
                k for k in props if k not in GRAMMAR_ORDER
            ]
            out["properties"] = {k: props[k] for k in ordered}
            out["required"] = ordered
            out["additionalProperties"] = False
        return out

    return cast(dict[str, Any], inline(root))


def system_prompt(
    knowledge: Knowledge,
    settings_row: AssistantSettings,
    structured_output: str,
    items_text: str | None,
) -> str:
    version = settings_row.prompt_version or "v1"
    if structured_output == "json_object":
        schema = json.dumps(inline_schema(), ensure_ascii=False, separators=(",", ":"))
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


def render_history(entries: list[HistoryEntry], limit: int | None = None) -> str:
    """The messages, the last `limit` of them (default LLM_HISTORY_MESSAGES; 0: all)."""
    limit = settings.LLM_HISTORY_MESSAGES if limit is None else limit
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


def retrieve_items(
    turn: TurnInput,
    knowledge: Knowledge,
    *,
    budget: int | None = None,
    must: list[int | None] | None = None,
    compact: bool = False,
) -> list[KnowledgeItem]:
    """Items for this turn when the list is too long: the items a manager agreed a price for,
    exact SKU and full-name mentions, then BM25 over the customer's recent words, within the
    context budget (fewer BM25 items for the compact prompt)."""
    recent = [e.text for e in turn.history[-6:] if e.speaker == "customer"]
    query = " ".join([*recent, *(e.text for e in turn.pending)])
    normalised = normalise(query)
    compacted = compact_text(query)
    exact = [i for i in (must or []) if i is not None] + [
        i
        for i, item in enumerate(knowledge.items)
        if (item.sku and len(compact_text(item.sku)) >= 3 and compact_text(item.sku) in compacted)
        or (len(item.name) >= 4 and normalise(item.name) in normalised)
    ]
    top = settings.LLM_RETRIEVAL_ITEMS
    ranked = knowledge.catalogue.retrieve(query, max(5, top // 4) if compact else top)
    chosen: list[int] = []
    budget = settings.LLM_CONTEXT_BUDGET_TOKENS if budget is None else budget
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
