"""The JSON API's way past a closed WhatsApp window (/api/v1/chats/{id}/templates, /template,
/pending-reply): registered on `api.router` when the URL configuration imports this module
(inbox/site/urls.py), so `api.py` stays the one place of the shared schemas."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Path, Schema
from ninja.responses import Status

from inbox.conversations import templates
from inbox.web import actions, template_actions
from inbox.web.api import ActionOut, ErrorOut, Id, _not_found, _result, router

MAX_VARIABLES = 50


class TemplateOut(Schema):
    name: str
    language: str
    category: str
    text: str = Field(description="The template's text with its variables, as WhatsApp has it.")
    variables: list[str] = Field(description='To fill: "1", "2"… or the named ones.')
    prefill: dict[str, str] = Field(description="Values the inbox would propose.")


class TemplateIn(Schema):
    name: str = Field(min_length=1, max_length=512)
    language: str = Field(min_length=1, max_length=16)
    variables: dict[str, str] = Field(default_factory=dict, max_length=MAX_VARIABLES)
    idempotency_key: str = Field(default="", pattern=r"^[A-Za-z0-9_-]{0,64}$")


class PendingIn(Schema):
    text: str = Field(min_length=1, max_length=actions.MAX_TEXT)


def _text(choice: template_actions.Choice) -> str:
    return templates.render(choice.template, {})


@router.get(
    "/chats/{chat_id}/templates",
    response={200: list[TemplateOut], 404: ErrorOut},
    summary="The approved WhatsApp templates that can be sent to this chat",
    tags=["actions"],
)
def list_templates(request: HttpRequest, chat_id: Path[Id]) -> Any:
    try:
        _chat, choices = template_actions.choices(request.user, chat_id)  # type: ignore[arg-type]
    except actions.ChatNotFound:
        return _not_found()
    return [
        TemplateOut(
            name=c.template.name,
            language=c.template.language,
            category=c.template.category,
            text=_text(c),
            variables=c.variables,
            prefill=c.values,
        )
        for c in choices
    ]


@router.post(
    "/chats/{chat_id}/template",
    response={200: ActionOut, 404: ErrorOut, 409: ErrorOut},
    summary="Send an approved template (the chat becomes human-owned)",
    description="409 when it must not go, nothing sent: not approved, a variable missing, the "
    "customer opted out (a marketing template, or any while the window is closed).",
    tags=["actions"],
)
def send_template(request: HttpRequest, chat_id: Path[Id], body: TemplateIn) -> Any:
    user: Any = request.user
    try:
        result = template_actions.send_template(
            user, chat_id, body.name, body.language, body.variables, key=body.idempotency_key
        )
    except actions.ChatNotFound:
        return _not_found()
    if result.error and not result.changed:
        return Status(409, ErrorOut(detail=result.error))
    return _result(result, user)


@router.post(
    "/chats/{chat_id}/pending-reply",
    response={200: ActionOut, 404: ErrorOut, 409: ErrorOut},
    summary="Keep an answer for the customer's return (the window is closed)",
    description="Sent by itself when the customer writes again, if the chat is still yours; "
    "the channel's re-engagement template, if one is chosen, invites them back now.",
    tags=["actions"],
)
def keep_pending(request: HttpRequest, chat_id: Path[Id], body: PendingIn) -> Any:
    user: Any = request.user
    try:
        result = template_actions.keep_pending(user, chat_id, body.text)
    except actions.ChatNotFound:
        return _not_found()
    if result.error:
        return Status(409, ErrorOut(detail=result.error))
    return _result(result, user)


@router.delete(
    "/chats/{chat_id}/pending-reply",
    response={200: ActionOut, 404: ErrorOut},
    summary="Take back the answer kept for the customer's return",
    tags=["actions"],
)
def cancel_pending(request: HttpRequest, chat_id: Path[Id]) -> Any:
    user: Any = request.user
    try:
        return _result(template_actions.cancel_pending(user, chat_id), user)
    except actions.ChatNotFound:
        return _not_found()
