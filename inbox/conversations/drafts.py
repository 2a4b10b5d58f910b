"""Supervised replies: a bot reply that waits for a person as a `Draft` on its chat.

    hold     the turn stores the reply instead of sending it (same checks as `send_reply`)
    approve  a manager sends it as is, or edited: through `send_reply` with the draft's
             version and answered messages, so a newer customer message or a manager taking
             over still wins (the draft is then superseded)
    reject   the chat goes to a person with reason `rejected_draft`; the customer is told nothing
    expire   not approved in time (inbox/upkeep/): the customer is told a person will confirm,
             the chat goes to a person with reason `approval_timeout`

A draft is current while it is pending, its chat's bot still owns the chat and the chat is at the
version the draft was generated at; a newer customer message makes it stale, and the next turn
supersedes it with a new one. Each decision claims the draft with a compare-and-set on its
state, so two managers pressing Approve send it once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from inbox.conversations import hooks
from inbox.conversations.handoff import hand_off
from inbox.conversations.models import Chat, Draft, HandoffReason, Owner, Turn
from inbox.conversations.outbound import send_reply

log = logging.getLogger(__name__)

# "held": stored, waiting; "stale" etc.: the reply lost the same race `send_reply` checks.
HoldReason = Literal["held", "stale", "not_bot_owner", "already_answered", "empty"]
# "no_draft": nothing pending (or another manager decided first); "stale": the chat moved on.
DecideReason = Literal["sent", "rejected", "expired", "no_draft", "stale", "empty", "not_sent"]

# `send_reply` refusals that mean the draft no longer answers the chat as it is.
_STALE_SENDS = frozenset({"stale", "not_bot_owner", "already_answered"})


@dataclass(frozen=True)
class HoldOutcome:
    held: bool
    reason: HoldReason
    draft_id: int | None = None


@dataclass(frozen=True)
class DecideOutcome:
    ok: bool
    reason: DecideReason
    draft_id: int | None = None
    message_id: int | None = None
    error: str = ""


def current() -> QuerySet[Draft]:
    """Pending drafts that still answer their chat as it is (the bot owns it, no newer
    customer message): what the "To approve" view lists."""
    return Draft.objects.filter(
        state=Draft.State.PENDING,
        chat__owner=Owner.BOT,
        chat__version=F("generated_at_version"),
    )


def current_for(chat_id: int) -> Draft | None:
    return current().filter(chat_id=chat_id).select_related("turn").order_by("-pk").first()


def why(draft: Draft) -> str:
    """What the assistant meant the reply as (its turn's action and reason), for the manager."""
    turn = draft.turn
    if turn is None:
        return ""
    return " · ".join(part for part in (turn.action, turn.reason) if part)


def hold(
    chat_id: int,
    text: str,
    *,
    turn_id: int | None,
    generated_at_version: int,
    answered_up_to: int,
) -> HoldOutcome:
    """Store the bot's reply as the chat's pending draft instead of sending it; an older
    pending draft of the chat is superseded. Refused on the same grounds as `send_reply`."""
    text = text.strip()
    if not text:
        return HoldOutcome(False, "empty")
    with transaction.atomic():
        chat = Chat.objects.select_for_update().get(pk=chat_id)
        if chat.owner != Owner.BOT:
            return HoldOutcome(False, "not_bot_owner")
        if chat.version != generated_at_version:
            return HoldOutcome(False, "stale")
        if answered_up_to <= chat.answered_up_to:
            return HoldOutcome(False, "already_answered")
        _supersede(chat.pk)
        draft = Draft.objects.create(
            chat=chat,
            turn_id=turn_id,
            text=text,
            generated_at_version=generated_at_version,
            answered_up_to=answered_up_to,
        )
        hooks.draft_changed(chat.pk)
    log.info("draft.held", extra={"chat_id": chat_id, "draft_id": draft.pk})
    return HoldOutcome(True, "held", draft.pk)


def approve(
    chat_id: int, *, manager: User | None, text: str | None = None, draft_id: int | None = None
) -> DecideOutcome:
    """Send the chat's pending draft as the bot's reply, as is or with the manager's `text`
    (then recorded as edited). `draft_id`, when given, must be the pending one."""
    edited = text is not None and text.strip() != ""
    if text is not None and not text.strip():
        return DecideOutcome(False, "empty", error="The reply is empty.")
    draft = _claim(chat_id, draft_id, Draft.State.EDITED if edited else Draft.State.APPROVED)
    if draft is None:
        return DecideOutcome(False, "no_draft")
    body = text.strip() if text is not None and edited else draft.text
    if edited and body == draft.text:
        Draft.objects.filter(pk=draft.pk).update(state=Draft.State.APPROVED)
        edited = False
    decided = {"decided_by": manager, "decided_at": timezone.now()}
    if edited:
        Draft.objects.filter(pk=draft.pk).update(sent_text=body, **decided)
    else:
        Draft.objects.filter(pk=draft.pk).update(**decided)
    outcome = send_reply(
        chat_id,
        body,
        generated_at_version=draft.generated_at_version,
        answered_up_to=draft.answered_up_to,
    )
    if outcome.reason in _STALE_SENDS:
        Draft.objects.filter(pk=draft.pk).update(state=Draft.State.SUPERSEDED)
        return DecideOutcome(False, "stale", draft.pk)
    if outcome.message_id is not None:
        Draft.objects.filter(pk=draft.pk).update(message_id=outcome.message_id)
        if draft.turn_id is not None:
            Turn.objects.filter(pk=draft.turn_id).update(reply_message_id=outcome.message_id)
    log.info("draft.approved", extra={"chat_id": chat_id, "draft_id": draft.pk, "edited": edited})
    if outcome.sent or outcome.reason == "retrying":
        return DecideOutcome(True, "sent", draft.pk, outcome.message_id)
    return DecideOutcome(False, "not_sent", draft.pk, outcome.message_id, outcome.error)


def reject(chat_id: int, *, manager: User | None, draft_id: int | None = None) -> DecideOutcome:
    """The draft is not sent: the chat goes to a person (`rejected_draft`), who answers."""
    draft = _claim(chat_id, draft_id, Draft.State.REJECTED)
    if draft is None:
        return DecideOutcome(False, "no_draft")
    Draft.objects.filter(pk=draft.pk).update(decided_by=manager, decided_at=timezone.now())
    outcome = hand_off(
        chat_id,
        reason=HandoffReason.REJECTED_DRAFT,
        summary="",
        facts={},
        message_to_customer="",
        generated_at_version=draft.generated_at_version,
        answered_up_to=draft.answered_up_to,
        details={"draft": draft.text},
    )
    if not outcome.handed_off:
        Draft.objects.filter(pk=draft.pk).update(state=Draft.State.SUPERSEDED)
        return DecideOutcome(False, "stale", draft.pk)
    log.info("draft.rejected", extra={"chat_id": chat_id, "draft_id": draft.pk})
    return DecideOutcome(True, "rejected", draft.pk)


def expire(draft_id: int, *, notice: str) -> DecideOutcome:
    """No one approved the draft in time: the customer reads `notice`, a person gets the chat
    (`approval_timeout`). A draft the chat has moved past is superseded instead."""
    draft = Draft.objects.filter(pk=draft_id).first()
    if draft is None:
        return DecideOutcome(False, "no_draft")
    claimed = _claim(draft.chat_id, draft.pk, Draft.State.EXPIRED)
    if claimed is None:
        return DecideOutcome(False, "no_draft")
    Draft.objects.filter(pk=draft.pk).update(decided_at=timezone.now())
    outcome = hand_off(
        draft.chat_id,
        reason=HandoffReason.APPROVAL_TIMEOUT,
        summary="",
        facts={},
        message_to_customer=notice,
        generated_at_version=draft.generated_at_version,
        answered_up_to=draft.answered_up_to,
        details={"draft": draft.text},
    )
    if not outcome.handed_off:
        Draft.objects.filter(pk=draft.pk).update(state=Draft.State.SUPERSEDED)
        return DecideOutcome(False, "stale", draft.pk)
    log.info("draft.expired", extra={"chat_id": draft.chat_id, "draft_id": draft.pk})
    return DecideOutcome(True, "expired", draft.pk, outcome.notice_message_id)


def supersede_stale() -> int:
    """Pending drafts whose chat moved on (a newer customer message, a person took it) are
    superseded; the upkeep calls this before it looks for drafts past their time."""
    stale = Draft.objects.filter(state=Draft.State.PENDING).exclude(pk__in=current().values("pk"))
    return stale.update(state=Draft.State.SUPERSEDED)


def _supersede(chat_id: int) -> None:
    Draft.objects.filter(chat_id=chat_id, state=Draft.State.PENDING).update(
        state=Draft.State.SUPERSEDED
    )


def _claim(chat_id: int, draft_id: int | None, state: str) -> Draft | None:
    """The chat's current pending draft, moved to `state` by this caller alone; None when there
    is none (or another decision won). A stale pending draft is superseded on the way."""
    draft = current_for(chat_id)
    if draft is None or (draft_id is not None and draft.pk != draft_id):
        if draft is None:
            _supersede(chat_id)
        return None
    won = Draft.objects.filter(pk=draft.pk, state=Draft.State.PENDING).update(state=state)
    if won != 1:
        return None
    hooks.draft_changed(chat_id)
    return draft
