"""The JSON API (/api/v1/) for scripts, integrations and monitoring.

django-ninja: Django-native function views whose request and response shapes are pydantic
models, from which it generates the OpenAPI 3 document at /api/v1/openapi.json. That is the
whole reason for it over a hand-rolled dispatcher: the schema cannot drift from the code.

Authentication is a per-user bearer token (`inbox/web/api_tokens.py`); permissions are the same as
in the inbox, through `inbox.conversations.access` and the actions in `inbox.web.actions`: a chat of
another business is a 404, exactly like a chat that does not exist.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from django.db.models import Q
from django.http import HttpRequest
from django.urls import reverse
from ninja import Field, NinjaAPI, Path, Query, Router, Schema
from ninja.responses import Status
from ninja.security import HttpBearer
from pydantic import field_validator

from inbox.conversations import (
    access,
    delivery_errors,
    delivery_status,
    flags,
    opt_outs,
    reading,
    window,
)
from inbox.conversations.models import Chat, Handoff, Message, MessageFlag
from inbox.web import actions, api_drafts, api_tokens, contact, dashboard, status_actions, why

MAX_ID = 2**63 - 1
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
OwnerState = Literal["bot", "pending_human", "human"]
StatusState = Literal["open", "snoozed", "resolved"]
ViewName = Literal["all", "mine", "unassigned"]


class TokenAuth(HttpBearer):
    def __call__(self, request: HttpRequest) -> Any:
        """Only `Authorization: Bearer <token>` is read. Anything else is simply not
        authenticated (401): django-ninja would log the whole header under DEBUG, and a token
        sent without its `Bearer ` prefix is still a secret."""
        scheme, _, token = request.headers.get(self.header, "").partition(" ")
        if scheme.lower() != self.openapi_scheme or not token.strip():
            return None
        return self.authenticate(request, token.strip())

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        user = api_tokens.authenticate(token)
        if user is not None:
            request.user = user
        return user


# What every operation may also answer, and the bodies django-ninja gives them: no token or a
# wrong one (401), a body that is not JSON (400), parameters or a body that fail validation (422).
_ERROR_BODY = {"type": "object", "properties": {"detail": {}}, "required": ["detail"]}
_COMMON_ANSWERS = {
    "400": "The request body is not valid JSON.",
    "401": "No valid `Authorization: Bearer <token>`.",
    "422": "A parameter or the body fails validation; `detail` lists each problem.",
}


class InboxApi(NinjaAPI):
    """The API whose OpenAPI document lists the 400/401/422 answers it really gives (so a
    client, and the schemathesis test, know every status to expect)."""

    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> Any:
        schema = super().get_openapi_schema(*args, **kwargs)
        for operations in schema["paths"].values():
            for operation in operations.values():
                for status, description in _COMMON_ANSWERS.items():
                    operation["responses"].setdefault(
                        status,
                        {
                            "description": description,
                            "content": {"application/json": {"schema": _ERROR_BODY}},
                        },
                    )
        return schema


api = InboxApi(
    title="WhatsApp operator inbox API",
    version="1",
    description="Chats, messages, handoffs and the manager actions, with the inbox's permissions.",
    auth=TokenAuth(),
    urls_namespace="api",
    openapi_url="/openapi.json",
    docs_url=None,
)
router = Router()


# --- schemas ---------------------------------------------------------------------------------


class ErrorOut(Schema):
    detail: str


class WindowClosedOut(Schema):
    """A free-text send refused: WhatsApp's customer-service window is closed."""

    error: Literal["window_closed"]
    detail: str
    window_closes_at: datetime | None
    templates: str = Field(description="GET: the approved templates that can be sent instead.")
    send_template: str = Field(
        description='POST {"name", "language", "variables"}: the way out, an approved template.'
    )
    pending_reply: str = Field(
        description='POST {"text"}: keep the answer; it is sent when the customer writes again.'
    )


class ChatOut(Schema):
    id: int
    business_id: int
    channel_id: int
    channel: str
    customer_name: str
    customer_phone: str
    owner: OwnerState
    version: int
    assigned_to: int | None
    status: StatusState
    snoozed_until: datetime | None
    unread_count: int = Field(
        description="Customer messages the requesting user has not seen (per manager)."
    )
    last_message_at: datetime | None
    last_customer_at: datetime | None
    last_manager_at: datetime | None
    owner_changed_at: datetime | None
    undeliverable: bool = Field(
        description="WhatsApp said the customer cannot receive messages (131026) and they have "
        "not written since: the assistant does not answer, a resend is refused."
    )
    window_closes_at: datetime | None = Field(
        description="WhatsApp Cloud API chats: when the 24-hour customer-service window closes "
        "(24 h after the customer's last message); past it only an approved template reaches "
        "the customer. "
        "Null on channels without a window and on a chat the customer never wrote in."
    )
    window_open: bool = Field(
        description="Whether free text may be sent now (always true without a window)."
    )

    @staticmethod
    def of(chat: Chat, user_id: int, *, masked: set[int] | frozenset[int] = frozenset()) -> ChatOut:
        """`masked`: the businesses whose numbers the requesting user sees masked."""
        unread = getattr(chat, "my_unread", None)
        if unread is None:
            read = reading.read_counts(user_id, [chat.pk])[chat.pk]
            unread = max(0, chat.customer_messages - read)
        closes = chat.window_closes_at if window.has_window(chat.channel.kind) else None
        return ChatOut(
            id=chat.pk,
            business_id=chat.channel.business_id,
            channel_id=chat.channel_id,
            channel=chat.channel.name,
            customer_name=chat.customer_name,
            customer_phone=(
                contact.masked_phone(chat.customer_phone)
                if chat.customer_phone and chat.channel.business_id in masked
                else chat.customer_phone
            ),
            owner=chat.owner,  # type: ignore[arg-type]
            version=chat.version,
            assigned_to=chat.assigned_to_id,
            status=chat.status,  # type: ignore[arg-type]
            snoozed_until=chat.snoozed_until,
            unread_count=unread,
            last_message_at=chat.last_message_at,
            last_customer_at=chat.last_customer_at,
            last_manager_at=chat.last_manager_at,
            owner_changed_at=chat.owner_changed_at,
            undeliverable=delivery_status.undeliverable(chat),
            window_closes_at=closes,
            window_open=window.is_open(chat),
        )


class MessageOut(Schema):
    id: int
    direction: Literal["in", "out", "internal"]
    author: Literal["customer", "bot", "manager", "phone", "system"]
    sent_by: int | None
    kind: str
    text: str
    transcript: str
    transcript_status: str
    transcript_confidence: float | None
    from_me: bool
    sent_by_bot: bool
    status: str
    status_at: datetime | None
    error_code: str
    error_title: str
    # Why it was not delivered, in plain words ("" unless failed).
    error_explanation: str
    media_url: str | None
    provider_timestamp: datetime | None
    created_at: datetime

    @staticmethod
    def of(message: Message) -> MessageOut:
        return MessageOut(
            id=message.pk,
            direction=message.direction,  # type: ignore[arg-type]
            author=message.author,  # type: ignore[arg-type]
            sent_by=message.sent_by_id,
            kind=message.kind,
            text=message.text,
            transcript=message.transcript,
            transcript_status=message.transcript_status,
            transcript_confidence=message.transcript_confidence,
            from_me=message.from_me,
            sent_by_bot=message.sent_by_bot,
            status=message.status,
            status_at=message.status_at,
            error_code=message.error_code,
            error_title=message.error_title,
            error_explanation=delivery_errors.explain(message.error_code, message.error_title)
            if message.status == Message.Status.FAILED
            else "",
            media_url=reverse("message_media", kwargs={"message_id": message.pk})
            if message.media_ref
            else None,
            provider_timestamp=message.provider_timestamp,
            created_at=message.created_at,
        )


class HandoffOut(Schema):
    id: int
    chat_id: int
    reason: str
    summary: str
    facts: dict[str, Any]
    message_to_customer: str
    details: dict[str, Any]
    created_at: datetime

    @staticmethod
    def of(handoff: Handoff) -> HandoffOut:
        return HandoffOut(
            id=handoff.pk,
            chat_id=handoff.chat_id,
            reason=handoff.reason,
            summary=handoff.summary,
            facts=handoff.facts if isinstance(handoff.facts, dict) else {},
            message_to_customer=handoff.message_to_customer,
            details=handoff.details if isinstance(handoff.details, dict) else {},
            created_at=handoff.created_at,
        )


class ChatDetailOut(ChatOut):
    messages: list[MessageOut]
    handoff: HandoffOut | None
    draft: api_drafts.DraftOut | None = Field(
        description="The bot reply waiting for a person's approval, if any."
    )
    opted_out: bool = Field(
        description="The customer asked the business not to write to them: nothing unprompted "
        "may be sent (replies to their own messages may)."
    )


class ActionOut(Schema):
    chat: ChatOut
    changed: bool
    notice: str
    error: str
    message_id: int | None


class TextIn(Schema):
    text: str = Field(min_length=1, max_length=actions.MAX_TEXT)
    idempotency_key: str = Field(
        default="",
        pattern=r"^[A-Za-z0-9_-]{0,64}$",
        description="Send the same key again (a retry) and the reply is sent only once.",
    )


class AssignIn(Schema):
    user_id: Id | None = Field(description="A manager of the chat's business; null: nobody.")


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError) as exc:
        raise ValueError("date out of range") from exc


class SnoozeIn(Schema):
    until: datetime = Field(description="When the chat comes back (in the future, within a year).")

    _aware_until = field_validator("until")(_aware)


def _plain(value: str | None) -> str | None:
    """No NUL and no lone surrogates: the database cannot store or compare them."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError("contains characters that are not allowed") from exc
    if "\x00" in value:
        raise ValueError("contains characters that are not allowed")
    return value


class ChatFilters(Schema):
    owner: OwnerState | None = None
    status: StatusState | None = Field(default=None, description="Any status when omitted.")
    view: ViewName = Field(
        default="all", description="mine: assigned to you; unassigned: assigned to nobody."
    )
    channel: Id | None = None
    q: str | None = Field(
        default=None,
        max_length=100,
        description=(
            "Search words, as in the inbox: the customer's name, digits of the number, or the "
            "text of a message (word forms: 'рассрочка' finds 'рассрочку', 'deliveries' finds "
            "'delivery')."
        ),
    )
    updated_since: datetime | None = Field(
        default=None, description="Chats with a message or an owner change at or after this."
    )
    limit: int = Field(default=50, ge=1, le=500)
    offset: int = Field(default=0, ge=0, le=100_000)

    _aware_since = field_validator("updated_since")(_aware)
    _plain_q = field_validator("q")(_plain)


class HandoffFilters(Schema):
    reason: str | None = Field(default=None, max_length=64)
    _plain_reason = field_validator("reason")(_plain)
    chat: Id | None = None
    limit: int = Field(default=50, ge=1, le=500)
    offset: int = Field(default=0, ge=0, le=100_000)


# --- endpoints -------------------------------------------------------------------------------


def _result(result: actions.ActionResult, user: Any) -> ActionOut:
    return ActionOut(
        chat=ChatOut.of(
            result.chat, dashboard.user_pk(user), masked=contact.businesses_masked_for(user)
        ),
        changed=result.changed,
        notice=result.notice,
        error=result.error,
        message_id=result.message_id,
    )


def _not_found() -> Status[ErrorOut]:
    return Status(404, ErrorOut(detail="No such chat."))


@router.get("/chats", response=list[ChatOut], summary="List chats", tags=["chats"])
def list_chats(request: HttpRequest, filters: Query[ChatFilters]) -> list[ChatOut]:
    user_id = dashboard.user_pk(request.user)
    chats = access.visible_chats(request.user).select_related("channel", "assigned_to")
    chats = dashboard.apply_work_filters(chats, user_id, filters.view, filters.status or "")
    chats = reading.with_unread(chats, user_id)
    if filters.owner:
        chats = chats.filter(owner=filters.owner)
    if filters.channel:
        chats = chats.filter(channel_id=filters.channel)
    if filters.q and filters.q.strip():
        chats = dashboard.searched_chats(chats, filters.q.strip())
    if filters.updated_since:
        since = filters.updated_since
        chats = chats.filter(Q(last_message_at__gte=since) | Q(owner_changed_at__gte=since))
    page = chats.order_by("-last_message_at", "-pk")[
        filters.offset : filters.offset + filters.limit
    ]
    masked = contact.businesses_masked_for(request.user)
    return [ChatOut.of(chat, user_id, masked=masked) for chat in page]


@router.get(
    "/chats/{chat_id}",
    response={200: ChatDetailOut, 404: ErrorOut},
    summary="One chat with its messages and handoff",
    tags=["chats"],
)
def get_chat(request: HttpRequest, chat_id: Path[Id]) -> Any:
    chat = access.visible_chat(request.user, chat_id)
    if chat is None:
        return _not_found()
    messages, _ = dashboard.recent_messages(chat)
    handoff = chat.handoffs.order_by("-pk").first()
    return ChatDetailOut(
        **ChatOut.of(
            chat,
            dashboard.user_pk(request.user),
            masked=contact.businesses_masked_for(request.user),
        ).model_dump(),
        messages=[MessageOut.of(m) for m in messages],
        handoff=HandoffOut.of(handoff) if handoff else None,
        draft=api_drafts.draft_of(chat.pk),
        opted_out=opt_outs.opted_out(chat.channel.business_id, chat.customer_key),
    )


@router.post(
    "/chats/{chat_id}/read",
    response={200: ChatOut, 404: ErrorOut},
    summary="Mark the chat read for the requesting user (what opening it in the inbox does)",
    tags=["actions"],
)
def mark_read(request: HttpRequest, chat_id: Path[Id]) -> Any:
    chat = access.visible_chat(request.user, chat_id)
    if chat is None:
        return _not_found()
    user_id = dashboard.user_pk(request.user)
    reading.mark_read(user_id, chat.pk)  # what opening the chat does (actions.mark_read)
    return ChatOut.of(chat, user_id, masked=contact.businesses_masked_for(request.user))


def _act(request: HttpRequest, action: Any, chat_id: int, *args: Any, **kwargs: Any) -> Any:
    try:
        return _result(action(request.user, chat_id, *args, **kwargs), request.user)
    except actions.ChatNotFound:
        return _not_found()


@router.post(
    "/chats/{chat_id}/reply",
    response={200: ActionOut, 404: ErrorOut, 409: WindowClosedOut},
    summary="Send a manager reply (the chat becomes human-owned)",
    description="409 `window_closed`: the WhatsApp Cloud API customer-service window is closed "
    "(`window_open` is false on the chat); free text would fail with WhatsApp error 131047, "
    "only an approved template can be sent: `POST /api/v1/chats/{chat_id}/template` (the body "
    "names it), or the answer kept for the customer's return (`POST …/pending-reply`).",
    tags=["actions"],
)
def reply(request: HttpRequest, chat_id: Path[Id], body: TextIn) -> Any:
    try:
        user: Any = request.user  # authenticated: TokenAuth ran
        result = actions.reply(user, chat_id, body.text, key=body.idempotency_key)
    except actions.ChatNotFound:
        return _not_found()
    if result.window_closed:
        closes = result.chat.window_closes_at
        return Status(
            409,
            WindowClosedOut(
                error="window_closed",
                detail=result.error,
                window_closes_at=closes,
                templates=f"/api/v1/chats/{chat_id}/templates",
                send_template=f"/api/v1/chats/{chat_id}/template",
                pending_reply=f"/api/v1/chats/{chat_id}/pending-reply",
            ),
        )
    return _result(result, request.user)


@router.post(
    "/chats/{chat_id}/messages/{message_id}/resend",
    response={200: ActionOut, 404: ErrorOut, 409: ErrorOut},
    summary="Send a failed message again, as a new message (the chat becomes human-owned)",
    description="The failed message stays failed and names the new one; `message_id` is the "
    "new message's. 409 when sending again cannot work (the number cannot receive WhatsApp "
    "messages; more than 24 hours since the customer wrote: a template is needed) or the "
    "message was sent again already.",
    tags=["actions"],
)
def resend(request: HttpRequest, chat_id: Path[Id], message_id: Path[Id]) -> Any:
    try:
        result = actions.resend_message(request.user, chat_id, message_id)  # type: ignore[arg-type]
    except actions.ChatNotFound:
        return _not_found()
    except actions.MessageNotFound:
        return Status(404, ErrorOut(detail="No such message."))
    if not result.changed:
        return Status(409, ErrorOut(detail=result.error))
    return _result(result, request.user)


@router.post(
    "/chats/{chat_id}/note",
    response={200: ActionOut, 404: ErrorOut},
    summary="Add an internal note",
    tags=["actions"],
)
def note(request: HttpRequest, chat_id: Path[Id], body: TextIn) -> Any:
    return _act(request, actions.note, chat_id, body.text, key=body.idempotency_key)


@router.post(
    "/chats/{chat_id}/take-over",
    response={200: ActionOut, 404: ErrorOut},
    summary="Take the chat from the bot",
    tags=["actions"],
)
def take_over(request: HttpRequest, chat_id: Path[Id]) -> Any:
    return _act(request, actions.take_over, chat_id)


@router.post(
    "/chats/{chat_id}/release",
    response={200: ActionOut, 404: ErrorOut},
    summary="Give the chat back to the bot",
    tags=["actions"],
)
def release(request: HttpRequest, chat_id: Path[Id]) -> Any:
    return _act(request, actions.release, chat_id)


@router.post(
    "/chats/{chat_id}/assign",
    response={200: ActionOut, 404: ErrorOut},
    summary="Assign the chat to a manager",
    tags=["actions"],
)
def assign(request: HttpRequest, chat_id: Path[Id], body: AssignIn) -> Any:
    return _act(request, actions.assign, chat_id, body.user_id)


@router.post(
    "/chats/{chat_id}/resolve",
    response={200: ActionOut, 404: ErrorOut},
    summary="Resolve the chat: it goes back to the bot (or, per business, waits for a human, "
    "unassigned) and reopens when the customer writes",
    tags=["actions"],
)
def resolve(request: HttpRequest, chat_id: Path[Id]) -> Any:
    return _act(request, status_actions.resolve, chat_id)


@router.post(
    "/chats/{chat_id}/snooze",
    response={200: ActionOut, 404: ErrorOut},
    summary="Snooze the chat until a time (it reopens then, or when the customer writes)",
    tags=["actions"],
)
def snooze(request: HttpRequest, chat_id: Path[Id], body: SnoozeIn) -> Any:
    return _act(request, status_actions.snooze, chat_id, body.until)


@router.post(
    "/chats/{chat_id}/reopen",
    response={200: ActionOut, 404: ErrorOut},
    summary="Reopen a resolved or snoozed chat",
    tags=["actions"],
)
def reopen(request: HttpRequest, chat_id: Path[Id]) -> Any:
    return _act(request, status_actions.reopen, chat_id)


@router.get("/handoffs", response=list[HandoffOut], summary="List handoffs", tags=["handoffs"])
def list_handoffs(request: HttpRequest, filters: Query[HandoffFilters]) -> list[HandoffOut]:
    handoffs = Handoff.objects.filter(chat__in=access.visible_chats(request.user))
    if filters.reason:
        handoffs = handoffs.filter(reason=filters.reason)
    if filters.chat:
        handoffs = handoffs.filter(chat_id=filters.chat)
    page = handoffs.order_by("-pk")[filters.offset : filters.offset + filters.limit]
    return [HandoffOut.of(h) for h in page]


class WhyItemOut(Schema):
    item: str = ""
    sku: str = ""
    qty: str = ""
    unit: str = ""


class WhyLineOut(Schema):
    item: str = ""
    sku: str = ""
    qty: str = ""
    unit: str = ""
    unit_price: str = ""
    total: str = ""
    agreed: str = ""


class ProofOut(Schema):
    amount: str = ""
    basis: str = ""


class FlagOut(Schema):
    id: int
    category: MessageFlag.Category
    category_label: str
    note: str
    flagged_by: str
    created_at: datetime


class WhyOut(Schema):
    """What the assistant read, computed and checked for one bot message (`inbox.web.why`)."""

    message_id: int
    chat_id: int
    recorded: bool = Field(description="False when no assistant turn is recorded for it.")
    asked: list[str] = Field(description="The customer's messages the reply answered.")
    outcome: str
    action: str
    reason: str
    backend: str
    model: str
    latency_ms: int | None
    model_error: str
    intents: list[str]
    items: list[WhyItemOut]
    lines: list[WhyLineOut]
    total: str
    proofs: list[ProofOut]
    findings: list[str]
    rules: list[str]
    agreements: list[str]
    reply_written: str
    flags: list[FlagOut]


class FlagIn(Schema):
    category: MessageFlag.Category
    note: str = Field(default="", max_length=flags.MAX_NOTE)


def _no_message() -> Status[ErrorOut]:
    return Status(404, ErrorOut(detail="No such bot message in this chat."))


@router.get(
    "/chats/{chat_id}/messages/{message_id}/why",
    response={200: WhyOut, 404: ErrorOut},
    summary="Why the assistant sent a bot message",
    tags=["chats"],
)
def message_why(request: HttpRequest, chat_id: Path[Id], message_id: Path[Id]) -> Any:
    try:
        return why.why_for(request.user, chat_id, message_id)
    except flags.MessageNotFound:
        return _no_message()


@router.post(
    "/chats/{chat_id}/messages/{message_id}/flag",
    response={201: FlagOut, 404: ErrorOut},
    summary="Flag a bot message as wrong",
    tags=["actions"],
)
def flag_message(
    request: HttpRequest, chat_id: Path[Id], message_id: Path[Id], body: FlagIn
) -> Any:
    try:
        flag = flags.flag_message(request.user, chat_id, message_id, body.category, body.note)
    except flags.MessageNotFound:
        return _no_message()
    return Status(201, FlagOut(**why.flag_out(flag)))


api.add_router("/", router)
api.add_router("/", api_drafts.router)
