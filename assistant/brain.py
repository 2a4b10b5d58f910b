"""One turn in, one Decision out: picks the backend and never fails the turn for a model problem.

    result = decide(turn)   # BrainResult(decision, backend, model_error, latency_ms)

Backends: the offline catalogue assistant when `LLM_BASE_URL` is empty; otherwise the LLM
client with its fallback chain (primary → secondary endpoint → a polite handoff with reason
`model_unavailable`; invalid output after one repair → handoff with reason `model_error`).
Whatever a backend says, a turn whose voice transcript is below the channel's confidence
threshold gets a clarifying question ("please repeat or type it"); the second unclear voice
turn in a row is handed to a person with reason `voice_unclear`.
Guardrails are not applied here: the turn calls `assistant.guardrails.check` on the result.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import redis
from django.conf import settings

from assistant import catalogue
from assistant.knowledge import Knowledge, assistant_settings, knowledge_for_channel
from assistant.llm import LLMClient, ModelOutputError, ModelUnavailable
from assistant.models import SYSTEM_HANDOFF_REASONS, AssistantSettings
from assistant.prompt import build_messages
from assistant.replies import handoff_message, is_text, language_for, text
from assistant.schema import Action, Decision, Facts, TurnInput

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BrainResult:
    decision: Decision
    backend: str  # "catalogue" | "llm:<endpoint name>" | "fallback"
    model_error: str  # empty when the backend answered normally
    latency_ms: float


def decide(turn: TurnInput) -> BrainResult:
    """The decision for one turn, from the channel's effective price list and settings."""
    knowledge = knowledge_for_channel(turn.channel_id)
    config = assistant_settings(turn.business_id)
    return decide_with(turn, knowledge, config)


def decide_with(
    turn: TurnInput,
    knowledge: Knowledge,
    config: AssistantSettings,
    client: LLMClient | None = None,
) -> BrainResult:
    """`decide` with its inputs given (the eval and benchmarks call this directly). Without a
    `client`, one is built from settings when LLM_BASE_URL is set; otherwise the catalogue
    assistant answers."""
    started = time.perf_counter()
    if client is None and settings.LLM_BASE_URL:
        client = default_client()
    if client is None:
        decision = catalogue.decide(turn, knowledge, config)
        backend, model_error = "catalogue", ""
    else:
        decision, backend, model_error = decide_with_model(client, turn, knowledge, config)
    decision = apply_voice_rule(turn, decision)
    latency_ms = (time.perf_counter() - started) * 1000
    log.info(
        "assistant.decided",
        extra={
            "chat_id": turn.chat_id,
            "action": decision.action.value,
            "reason": decision.reason,
            "backend": backend,
            "knowledge_version": knowledge.version,
            "latency_ms": round(latency_ms, 1),
            "model_error": model_error[:200],
        },
    )
    return BrainResult(decision, backend, model_error, latency_ms)


def apply_voice_rule(turn: TurnInput, decision: Decision) -> Decision:
    """Below the confidence threshold the customer is asked to repeat, whatever the backend
    decided; if the bot's last message already asked that, a person takes over."""
    confidence = turn.lowest_voice_confidence
    if confidence is None or confidence >= turn.voice_confidence_threshold:
        return decision
    lang = language_for(turn)
    last_bot = next((e for e in reversed(turn.history) if e.speaker in ("bot", "manager")), None)
    if (
        last_bot is not None
        and last_bot.speaker == "bot"
        and is_text(last_bot.text, "clarify.voice")
    ):
        return Decision(
            action=Action.HANDOFF,
            reason="voice_unclear",
            summary=f"Voice message not understood twice (confidence {confidence:.2f}).",
            reply_to_customer=handoff_message("voice_unclear", lang),
            facts=decision.facts,
        )
    return Decision(
        action=Action.CLARIFY,
        reason="voice_unclear",
        summary=decision.summary,
        reply_to_customer=text("clarify.voice", lang),
        facts=decision.facts,
    )


def decide_with_model(
    client: LLMClient, turn: TurnInput, knowledge: Knowledge, config: AssistantSettings
) -> tuple[Decision, str, str]:
    """(decision, backend, model_error) from the model; a handoff when it cannot give one."""

    def messages_for(mode: str) -> list[dict[str, str]]:
        return build_messages(turn, knowledge, config, structured_output=mode)

    try:
        completion = client.complete_decision(
            messages_for, business_id=turn.business_id, prompt_version=config.prompt_version
        )
    except ModelUnavailable as exc:
        summary = "The assistant's model did not answer; please reply to the customer."
        return fallback_handoff(turn, "model_unavailable", summary), "fallback", str(exc)
    except ModelOutputError as exc:
        summary = "The assistant's model gave an unusable answer; please reply to the customer."
        return fallback_handoff(turn, "model_error", summary), "fallback", str(exc)
    except redis.ConnectionError:
        # Redis (where the breakers and admission slots live) is away for a moment: not the
        # model's fault. The turn task retries; a handoff here would give a customer to a person
        # for a one-second blip.
        raise
    except Exception as exc:  # a customer is never left without an answer
        log.exception("assistant.model_path_crashed", extra={"chat_id": turn.chat_id})
        summary = "The assistant failed; please reply to the customer."
        return fallback_handoff(turn, "model_error", summary), "fallback", repr(exc)[:500]
    return normalise(completion.decision, turn, config), f"llm:{completion.endpoint}", ""


def normalise(decision: Decision, turn: TurnInput, config: AssistantSettings) -> Decision:
    """Fill a handoff's missing message and make an unknown handoff reason visible."""
    if decision.action != Action.HANDOFF:
        return decision
    reason = decision.reason.strip().lower().replace(" ", "_")[:64] or "asks_for_human"
    known = set(config.reason_codes()) | set(SYSTEM_HANDOFF_REASONS)
    if reason not in known:
        log.info("assistant.unknown_reason", extra={"reason": reason})
    reply = decision.reply_to_customer.strip() or handoff_message(reason, language_for(turn))
    return decision.model_copy(update={"reason": reason, "reply_to_customer": reply})


_clients: dict[tuple[object, ...], LLMClient] = {}


def default_client() -> LLMClient:
    """The client built from settings, once per process and configuration (it holds
    connection pools)."""
    key = tuple(
        getattr(settings, name) for name in sorted(dir(settings)) if name.startswith("LLM_")
    )
    client = _clients.get(key)
    if client is None:
        _clients.clear()
        client = _clients[key] = LLMClient.from_settings()
    return client


def fallback_handoff(turn: TurnInput, reason: str, summary: str) -> Decision:
    """The handoff every failure path ends in: a polite message in the customer's language."""
    return Decision(
        action=Action.HANDOFF,
        reason=reason,
        summary=summary,
        reply_to_customer=handoff_message(reason, language_for(turn)),
        facts=Facts(),
    )
