"""One turn in, one Decision out: picks the backend and never fails the turn for a model problem.

    result = decide(turn)   # BrainResult(decision, backend, model_error, latency_ms)

Backends: the offline catalogue assistant when `LLM_BASE_URL` is empty and the business has no
model endpoint of its own; otherwise the LLM client (`assistant.llm.business.client_for`: the
business's own endpoint when set, else the installation's chain, primary → secondary endpoint)
→ a polite handoff with reason `model_unavailable`; invalid output after one repair → handoff
with reason `model_error`; the server refusing the request as configured (key, model, context,
schema), or the egress allow-list refusing a business's endpoint → handoff with reason
`model_misconfigured`, and the alert check runs at once so the operator learns the cause.
Whatever a backend says, the rules of `assistant.decision.escalation` have the last word on
whether a person takes over (an unclear voice note, a model failure); on the model path,
`assistant.decision.model_reading` first acts on what the model read (a handoff from its
intents, every product amount composed from its items). Guardrails are not applied here:
the turn checks the result with `assistant.decision.guardrails`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import redis
from celery import current_app

from assistant.decision import catalogue, escalation, model_reading
from assistant.knowledge.effective import Knowledge, assistant_settings, knowledge_for_channel
from assistant.llm import business
from assistant.llm.client import (
    LLMClient,
    ModelMisconfigured,
    ModelOutputError,
    ModelUnavailable,
)
from assistant.llm.prompt import build_messages
from assistant.models import AssistantSettings
from assistant.schema import Decision, TurnInput
from inbox.conversations.models import HandoffReason
from inbox.platform import egress

log = logging.getLogger(__name__)
ALERT_CHECK_TASK = "inbox.check_alerts"  # inbox.upkeep.tasks (a layer above: by name only)


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
    `client`, the business's (its own endpoint, or the installation's when LLM_BASE_URL is
    set); with neither, the catalogue assistant answers."""
    started = time.perf_counter()
    refused = ""
    if client is None:
        try:
            client = business.client_for(config)
        except egress.EgressRefused as exc:
            refused = f"the business's model endpoint is not allowed: {exc}"
    if refused:
        summary = f"The model endpoint was refused; please reply to the customer. {refused}"
        decision = escalation.model_failed(turn, HandoffReason.MODEL_MISCONFIGURED, summary[:500])
        backend, model_error = "fallback", refused
    elif client is None:
        decision = catalogue.decide(turn, knowledge, config)
        backend, model_error = "catalogue", ""
    else:
        decision, backend, model_error = decide_with_model(client, turn, knowledge, config)
    decision = escalation.unclear_voice(turn, escalation.normalise(decision, turn, config))
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


def decide_with_model(
    client: LLMClient, turn: TurnInput, knowledge: Knowledge, config: AssistantSettings
) -> tuple[Decision, str, str]:
    """(decision, backend, model_error) from the model; a handoff when it cannot give one."""

    def messages_for(mode: str, compact: bool = False) -> list[dict[str, str]]:
        return build_messages(turn, knowledge, config, structured_output=mode, compact=compact)

    try:
        completion = client.complete_decision(
            messages_for, business_id=turn.business_id, prompt_version=config.prompt_version
        )
    except ModelMisconfigured as exc:
        _check_alerts_now()
        summary = (
            "The model server refused the request as misconfigured; please reply to the "
            f"customer. Cause: {'; '.join(exc.causes)[:400]}"
        )
        return (
            escalation.model_failed(turn, HandoffReason.MODEL_MISCONFIGURED, summary),
            "fallback",
            str(exc),
        )
    except ModelUnavailable as exc:
        summary = "The assistant's model did not answer; please reply to the customer."
        return (
            escalation.model_failed(turn, HandoffReason.MODEL_UNAVAILABLE, summary),
            "fallback",
            str(exc),
        )
    except ModelOutputError as exc:
        summary = "The assistant's model gave an unusable answer; please reply to the customer."
        return (
            escalation.model_failed(turn, HandoffReason.MODEL_ERROR, summary),
            "fallback",
            str(exc),
        )
    except redis.ConnectionError:
        # Redis (where the breakers and admission slots live) is away for a moment: not the
        # model's fault. The turn task retries; a handoff here would give a customer to a person
        # for a one-second blip.
        raise
    except Exception as exc:  # a customer is never left without an answer
        log.exception("assistant.model_path_crashed", extra={"chat_id": turn.chat_id})
        summary = "The assistant failed; please reply to the customer."
        return (
            escalation.model_failed(turn, HandoffReason.MODEL_ERROR, summary),
            "fallback",
            repr(exc)[:500],
        )
    decision = model_reading.applied(completion.decision, turn, knowledge, config)
    decision = model_reading.summarised(decision, turn, knowledge)
    return decision, f"llm:{completion.endpoint}", ""


def _check_alerts_now() -> None:
    """Run the alert check now rather than at the next beat: a misconfigured model server
    (wrong key, unknown model) is named in an alert within seconds. Best effort: the beat
    task raises it anyway within a minute."""
    try:
        current_app.send_task(ALERT_CHECK_TASK, ignore_result=True)
    except Exception:  # the broker is away: the beat will do it
        log.warning("assistant.alert_check_not_queued", exc_info=True)
