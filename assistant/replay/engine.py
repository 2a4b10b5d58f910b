"""Replay past turns of one business with a candidate change, compare, then apply or discard.

    run = start(business, user, Selection(days=7), candidate)   # queues assistant.replay
    replay(run.pk)                                                # the worker: turn by turn
    gate(run)                                                     # may it be applied as is?
    apply(run, user, confirmed=False)                             # raises GateClosed

Each recorded turn (inbox.Turn) is answered again by the real decision code
(`brain.decide_with`, `guardrails.check_against`, `escalation.guarded`) with the same history
it had, the candidate's price list, settings and model, and nothing else: no message is sent,
no chat, turn, handoff or owner changes, and the model calls are labelled `replay` in metrics.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from celery import current_app
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from assistant import turn as assistant_turn
from assistant.decision import brain, escalation, guardrails
from assistant.knowledge.effective import assistant_settings
from assistant.knowledge.money import find_amounts, format_money
from assistant.knowledge.price_import import apply_price_list
from assistant.models import AssistantSettings, ReplayRun, ReplayTurn
from assistant.replay.candidate import Candidate
from assistant.schema import Action
from inbox.conversations import turns
from inbox.conversations.access import User
from inbox.conversations.models import Business, Channel, HandoffReason, Turn

log = logging.getLogger(__name__)

REPLAY_TASK = "assistant.replay"
MAX_TURNS = 500
REPLAY_TIME_LIMIT_SECONDS = 1860  # the task's hard time limit (assistant/replay/tasks.py)
# Turns the assistant decided (not lost, not dropped before deciding, not handed off as late).
DECIDED = (Turn.Outcome.ANSWERED, Turn.Outcome.CLARIFIED, Turn.Outcome.HANDED_OFF)
GUARDRAIL = HandoffReason.GUARDRAIL


class GateClosed(Exception):
    """The candidate raises guardrail blocks or handoffs past the business's threshold."""


class NotAppliable(Exception):
    """The run is not finished, already applied or discarded, or has nothing to apply."""


@dataclass(frozen=True)
class Selection:
    days: int = 7
    channel_id: int | None = None
    reason: str = ""  # only turns handed off with this reason
    chat_ids: tuple[int, ...] = ()  # a saved set
    limit: int = 200


def selected_turns(business_id: int, selection: Selection) -> QuerySet[Turn]:
    """The business's recorded turns a replay answers again, oldest first."""
    found = Turn.objects.filter(
        chat__channel__business_id=business_id,
        outcome__in=DECIDED,
        started_at__gte=timezone.now() - timedelta(days=selection.days),
    ).exclude(reason=HandoffReason.LATE)
    if selection.channel_id is not None:
        found = found.filter(chat__channel_id=selection.channel_id)
    if selection.reason:
        found = found.filter(reason=selection.reason)
    if selection.chat_ids:
        found = found.filter(chat_id__in=selection.chat_ids)
    limit = max(1, min(selection.limit, MAX_TURNS))
    return found.select_related("chat", "chat__channel", "reply_message").order_by("-id")[:limit]


def start(
    business: Business,
    user: User,
    selection: Selection,
    candidate: Candidate,
    review: dict[str, str] | None = None,
) -> ReplayRun:
    """Record the run and queue it on the assistant queue once the row is committed. `review`:
    the weekly review's entry and fix a "Replay first" tries (resolved when it is applied)."""
    if candidate.price_list_channel_id is not None:
        Channel.objects.get(pk=candidate.price_list_channel_id, business=business)
    if selection.channel_id is not None:
        Channel.objects.get(pk=selection.channel_id, business=business)
    run = ReplayRun.objects.create(
        business=business,
        created_by_id=user.pk if user.is_authenticated else None,
        selection={
            **asdict(selection),
            "chat_ids": list(selection.chat_ids),
            **({"review": review} if review else {}),
        },
        candidate=candidate.to_json(),
        model_api_key=candidate.model.api_key if candidate.model else "",
    )
    transaction.on_commit(lambda: _enqueue(run.pk))
    return run


def _enqueue(run_id: int) -> None:
    current_app.send_task(REPLAY_TASK, args=(run_id,))  # by name: the task module imports us


def replay(run_id: int) -> None:
    """Answer each selected turn again; progress in `done`/`total` as it goes."""
    # Only a queued run is claimed: the broker hands a long task to a second worker after its
    # visibility timeout while the first still runs it, and that copy must do nothing.
    claimed = ReplayRun.objects.filter(pk=run_id, status=ReplayRun.Status.QUEUED).update(
        status=ReplayRun.Status.RUNNING
    )
    run = ReplayRun.objects.select_related("business").filter(pk=run_id).first()
    if claimed != 1 or run is None:
        return  # gone, discarded, or a second delivery of a run already under way
    candidate = Candidate.from_json(run.candidate, run.model_api_key)
    recorded = list(reversed(selected_turns(run.business_id, Selection(**_selection(run)))))
    ReplayRun.objects.filter(pk=run.pk).update(total=len(recorded))
    try:
        client = candidate.client(assistant_settings(run.business_id))
        for recorded_turn in recorded:
            candidate.check_egress()
            result = replay_turn(recorded_turn, candidate, client)
            if result is not None:
                result.run = run
                result.save()
            ReplayRun.objects.filter(pk=run.pk).update(done=F("done") + 1)
    except Exception as exc:
        log.exception("replay.failed", extra={"replay_id": run.pk})
        ReplayRun.objects.filter(pk=run.pk).update(
            status=ReplayRun.Status.FAILED,
            error=f"{type(exc).__name__}: {exc}"[:500],
            finished_at=timezone.now(),
        )
        return
    ReplayRun.objects.filter(pk=run.pk, status=ReplayRun.Status.RUNNING).update(
        status=ReplayRun.Status.DONE, summary=summarise(run), finished_at=timezone.now()
    )
    log.info("replay.done", extra={"replay_id": run.pk, "turns": len(recorded)})


def settle(run: ReplayRun) -> ReplayRun:
    """The run as it stands; one still "running" past the task's hard time limit lost its
    worker and is recorded as failed, not left spinning on the page."""
    cutoff = timezone.now() - timedelta(seconds=REPLAY_TIME_LIMIT_SECONDS)
    if run.status == ReplayRun.Status.RUNNING and run.created_at < cutoff:
        ReplayRun.objects.filter(pk=run.pk, status=ReplayRun.Status.RUNNING).update(
            status=ReplayRun.Status.FAILED, error="interrupted", finished_at=timezone.now()
        )
        run.refresh_from_db()
    return run


def _selection(run: ReplayRun) -> dict[str, Any]:
    data = dict(run.selection)
    data.pop("review", None)  # the review entry a "Replay first" fix came from, not a filter
    data["chat_ids"] = tuple(data.get("chat_ids", ()))
    return data


def replay_turn(recorded: Turn, candidate: Candidate, client: Any) -> ReplayTurn | None:
    """What the assistant would decide now for this recorded turn (unsaved); None when its
    messages are gone."""
    pending = turns.as_recorded(recorded)
    if pending is None:
        return None
    turn_input = assistant_turn.build_input(pending)
    knowledge = candidate.knowledge_for(turn_input.channel_id)
    config = candidate.settings_for(turn_input.business_id)
    result = brain.decide_with(turn_input, knowledge, config, client=client)
    proposed = result.decision
    verdict = guardrails.check_against(proposed, turn_input, knowledge, config)
    final, _details = escalation.guarded(proposed, verdict, turn_input)
    now = {
        "action": final.action.value,
        "reason": final.reason if final.action == Action.HANDOFF else "",
        "reply": proposed.reply_to_customer,
        "sent": final.reply_to_customer,
        "blocked": verdict.blocked,
        "amounts": checked_amounts(proposed.reply_to_customer, verdict.blocked),
        "backend": result.backend,
        "model_error": result.model_error[:300],
    }
    then = recorded_answer(recorded)
    return ReplayTurn(
        turn=recorded,
        chat=recorded.chat,
        customer_text="\n".join(m.content for m in pending.messages)[:4000],
        change=classify(then, now),
        then=then,
        now=now,
    )


def recorded_answer(recorded: Turn) -> dict[str, Any]:
    """What the assistant said then, in the same shape as a replayed answer."""
    reply = str((recorded.decision or {}).get("reply_to_customer", ""))
    handed_off = recorded.outcome == Turn.Outcome.HANDED_OFF
    blocked = list(recorded.guardrail_findings or [])
    return {
        "action": Action.HANDOFF.value if handed_off else recorded.action,
        "reason": recorded.reason if handed_off else "",
        "reply": reply,
        "sent": recorded.reply_message.content if recorded.reply_message else "",
        "blocked": blocked,
        "amounts": checked_amounts(reply, blocked),
        "backend": recorded.backend,
        "model_error": recorded.model_error[:300],
    }


def checked_amounts(reply: str, blocked: list[str]) -> list[dict[str, Any]]:
    """Every amount of a reply, and whether the guardrail proved it (not named in a finding)."""
    amounts = []
    for amount in find_amounts(reply):
        money = format_money(amount.value, amount.currency) if amount.currency else amount.text
        ok = not any(text in finding for finding in blocked for text in {amount.text, money})
        amounts.append({"text": money, "value": str(amount.value), "ok": ok})
    return amounts


def classify(then: dict[str, Any], now: dict[str, Any]) -> str:
    """The report's group of one turn; the first that applies wins."""
    if now["reason"] == GUARDRAIL and then["reason"] != GUARDRAIL:
        return ReplayTurn.Change.BLOCKED
    if (then["action"], then["reason"]) != (now["action"], now["reason"]):
        return ReplayTurn.Change.DECISION
    if [a["value"] for a in then["amounts"]] != [a["value"] for a in now["amounts"]]:
        return ReplayTurn.Change.AMOUNT
    return ReplayTurn.Change.UNCHANGED


def summarise(run: ReplayRun) -> dict[str, Any]:
    """Counts per group and the before/after shares of handoffs and guardrail blocks."""
    rows = [{"change": r.change, "then": r.then, "now": r.now} for r in run.turns.all()]
    total = len(rows)
    counts = {change: 0 for change in ReplayTurn.Change.values}
    for row in rows:
        counts[row["change"]] += 1

    def share(side: str, test: Any) -> float:
        hits = [row for row in rows if test(row[side])]
        return len(hits) / total if total else 0.0

    def handed(answer: dict[str, Any]) -> bool:
        return bool(answer["action"] == Action.HANDOFF.value)

    def blocked(answer: dict[str, Any]) -> bool:
        return bool(answer["reason"] == GUARDRAIL)

    return {
        "total": total,
        "counts": counts,
        "handoffs": {"then": share("then", handed), "now": share("now", handed)},
        "blocks": {"then": share("then", blocked), "now": share("now", blocked)},
    }


def gate(run: ReplayRun) -> list[str]:
    """Why this candidate needs a confirmation before Apply (empty: it does not)."""
    config = AssistantSettings.objects.filter(business_id=run.business_id).first()
    if config is None or not config.replay_gate or not run.summary:
        return []
    limit = config.replay_gate_threshold
    problems = []
    # Said in the reader's language where a page asks (English in a worker).
    rises = (
        ("blocks", gettext("guardrail blocks rise from %(then)s to %(now)s of replayed turns")),
        ("handoffs", gettext("handoffs rise from %(then)s to %(now)s of replayed turns")),
    )
    for key, text in rises:
        before, after = run.summary[key]["then"], run.summary[key]["now"]
        if after - before > limit:
            shares = {"then": f"{before:.0%}", "now": f"{after:.0%}"}
            threshold = gettext("(the threshold is %(limit)s)") % {"limit": f"{limit:.0%}"}
            problems.append(f"{text % shares} {threshold}")
    return problems


def appliable(run: ReplayRun) -> bool:
    """Finished, not applied or discarded yet, and with a change Apply can write."""
    return run.status == ReplayRun.Status.DONE and any(
        kind in run.candidate for kind in ("price_list", "rules", "model")
    )


def apply(run: ReplayRun, user: User, *, confirmed: bool = False) -> list[str]:
    """Make the candidate live: the price list as a new version, the rules saved, the model
    endpoint saved as the business's own (its next turns go there; the installation's
    LLM_BASE_URL stays for every other business). Returns what changed, in words. Raises
    GateClosed (unless confirmed), NotAppliable, or EgressRefused (the model URL is no longer
    allowed: nothing is applied)."""
    with transaction.atomic():
        locked = ReplayRun.objects.select_for_update().get(pk=run.pk)
        if not appliable(locked):
            raise NotAppliable(gettext("this replay cannot be applied"))
        problems = gate(locked)
        if problems and not confirmed:
            raise GateClosed("; ".join(problems))
        candidate = Candidate.from_json(locked.candidate, locked.model_api_key)
        candidate.check_egress()
        applied = []
        if candidate.preview is not None:
            channel = None
            if candidate.price_list_channel_id is not None:
                channel = Channel.objects.get(
                    pk=candidate.price_list_channel_id, business_id=locked.business_id
                )
            version = apply_price_list(candidate.preview, locked.business, channel, user)
            applied.append(gettext("price list version %(number)s") % {"number": version.number})
        if candidate.rules is not None:
            config, _ = AssistantSettings.objects.get_or_create(business_id=locked.business_id)
            config.business_rules = candidate.rules.get("business_rules", "")
            config.handoff_reasons = candidate.rules.get("handoff_reasons", [])
            config.forbidden_promises = candidate.rules.get("forbidden_promises", [])
            config.save()
            applied.append(gettext("the rules"))
        if candidate.model is not None:
            config, _ = AssistantSettings.objects.get_or_create(business_id=locked.business_id)
            config.model_base_url = candidate.model.base_url
            config.model_name = candidate.model.model
            config.model_structured_output = candidate.model.structured_output
            config.model_api_key = candidate.model.api_key
            config.save()
            model = {"model": candidate.model.model, "url": candidate.model.base_url}
            applied.append(gettext("model %(model)s at %(url)s") % model)
        locked.status = ReplayRun.Status.APPLIED
        locked.save(update_fields=["status"])
    log.info("replay.applied", extra={"replay_id": run.pk, "applied": applied})
    return applied


def discard(run: ReplayRun) -> bool:
    """Forget the candidate; False if the run was applied already."""
    changed = (
        ReplayRun.objects.filter(pk=run.pk)
        .exclude(status=ReplayRun.Status.APPLIED)
        .update(status=ReplayRun.Status.DISCARDED)
    )
    return changed == 1
