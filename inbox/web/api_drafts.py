"""The JSON API's supervised replies: a chat's `draft` (a bot reply waiting for approval) and
approving (as is, or edited) or rejecting it. Same permissions as the inbox: a chat of another
business is a 404. `api.py` carries the draft on `GET /chats/{id}` and mounts this router."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Field, Path, Router, Schema
from ninja.responses import Status

from inbox.conversations import access, drafts
from inbox.conversations.models import Draft
from inbox.web import actions

DraftId = Annotated[int, Field(ge=1, le=2**63 - 1)]
router = Router()


class DraftOut(Schema):
    id: int
    text: str
    created_at: datetime
    why: str = Field(description="What the assistant meant the reply as: its turn's action "
                     "and reason.")  # fmt: skip

    @staticmethod
    def of(draft: Draft) -> DraftOut:
        return DraftOut(
            id=draft.pk, text=draft.text, created_at=draft.created_at, why=drafts.why(draft)
        )


class DraftDecisionIn(Schema):
    text: str | None = Field(
        default=None,
        min_length=1,
        max_length=actions.MAX_TEXT,
        description="The edited reply to send instead of the draft's text (recorded as edited).",
    )


class DraftDecisionOut(Schema):
    chat_id: int
    draft_id: int
    state: str
    message_id: int | None


class DraftConflictOut(Schema):
    """No pending draft, or the chat moved on (a newer customer message, a person took it)."""

    error: str
    detail: str


_NO_CHAT = Status(404, DraftConflictOut(error="not_found", detail="No such chat."))
_CONFLICT = {
    "no_draft": "No reply of this chat is waiting for approval.",
    "stale": "The draft is stale: the chat moved on since it was written.",
    "not_sent": "The reply could not be sent.",
    "empty": "The reply is empty.",
}


def draft_of(chat_id: int) -> DraftOut | None:
    draft = drafts.current_for(chat_id)
    return DraftOut.of(draft) if draft is not None else None


def _decided(chat_id: int, outcome: drafts.DecideOutcome) -> Any:
    if not outcome.ok or outcome.draft_id is None:
        detail = outcome.error or _CONFLICT.get(outcome.reason, outcome.reason)
        return Status(409, DraftConflictOut(error=outcome.reason, detail=detail))
    state = Draft.objects.values_list("state", flat=True).get(pk=outcome.draft_id)
    return DraftDecisionOut(
        chat_id=chat_id, draft_id=outcome.draft_id, state=state, message_id=outcome.message_id
    )


@router.post(
    "/chats/{chat_id}/draft/approve",
    response={200: DraftDecisionOut, 404: DraftConflictOut, 409: DraftConflictOut},
    summary="Send the chat's waiting bot reply, as is or with an edited `text`",
    description="409 when no reply is waiting or the draft is stale (a newer customer message, "
    "a person took the chat).",
    tags=["actions"],
)
def approve(request: HttpRequest, chat_id: Path[DraftId], body: DraftDecisionIn) -> Any:
    user: Any = request.user
    if access.visible_chat(user, chat_id) is None:
        return _NO_CHAT
    return _decided(chat_id, drafts.approve(chat_id, manager=user, text=body.text))


@router.post(
    "/chats/{chat_id}/draft/reject",
    response={200: DraftDecisionOut, 404: DraftConflictOut, 409: DraftConflictOut},
    summary="Do not send the chat's waiting bot reply: a person gets the chat",
    tags=["actions"],
)
def reject(request: HttpRequest, chat_id: Path[DraftId]) -> Any:
    user: Any = request.user
    if access.visible_chat(user, chat_id) is None:
        return _NO_CHAT
    return _decided(chat_id, drafts.reject(chat_id, manager=user))
