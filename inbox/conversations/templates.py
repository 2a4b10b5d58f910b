"""WhatsApp message templates: the store's queries, filling their variables, and the rules of
sending one.

Past WhatsApp's 24-hour window (`window`) only an approved template reaches a customer. A
template's text has variables, positional (`{{1}}`) or named (`{{first_name}}`); the manager
fills them, we render the text the customer will read (kept as the message's text, so the chat
shows it) and send the template's name, language and the values as the Graph API wants them.

A template send is a manager's send: the chat becomes HUMAN first (`ownership.manager_replied`)
and the row is recorded before the transport is called (`outbound.record_outbound`), so the
delivery statuses that follow apply to it like to any reply. It is refused, with nothing sent,
when the template is not approved, when a variable is empty, and when the customer opted out of
the business's messages (`opt_outs`) for a marketing template or any template sent while the
window is closed (an unprompted send).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max, QuerySet
from django.utils import timezone, translation

from inbox.conversations import opt_outs, ownership, window
from inbox.conversations.models import Channel, Chat, Message, MessageTemplate, Turn
from inbox.conversations.outbound import SendOutcome, deliver_recorded, record_outbound

log = logging.getLogger(__name__)

_VARIABLE = re.compile(r"\{\{\s*([A-Za-z0-9_]+)\s*\}\}")
MAX_VALUE = 1024  # WhatsApp's limit of a body parameter's text
# Component types whose text may have variables, in the order WhatsApp renders them.
_WITH_VARIABLES = ("HEADER", "BODY")


class Refused(Exception):
    """The template cannot be sent now; `str(exc)` says why, for the manager."""


def approved(channel: Channel | int) -> QuerySet[MessageTemplate]:
    """The channel's templates that may be sent, by name and language."""
    channel_id = channel if isinstance(channel, int) else channel.pk
    return MessageTemplate.objects.filter(
        channel_id=channel_id, status=MessageTemplate.Status.APPROVED
    ).order_by("name", "language")


def find(channel_id: int, name: str, language: str) -> MessageTemplate | None:
    return MessageTemplate.objects.filter(
        channel_id=channel_id, name=name, language=language
    ).first()


def _component(template: MessageTemplate, kind: str) -> dict[str, Any] | None:
    for component in template.components if isinstance(template.components, list) else []:
        if isinstance(component, dict) and str(component.get("type", "")).upper() == kind:
            return component
    return None


def _text_of(template: MessageTemplate, kind: str) -> str:
    component = _component(template, kind)
    if component is None:
        return ""
    if kind == "HEADER" and str(component.get("format", "TEXT")).upper() != "TEXT":
        return ""  # a media header has no text to fill
    text = component.get("text")
    return text if isinstance(text, str) else ""


def variables(template: MessageTemplate) -> list[str]:
    """The variables to fill, header's first, each once, in the order they appear."""
    seen: list[str] = []
    for kind in _WITH_VARIABLES:
        for name in _VARIABLE.findall(_text_of(template, kind)):
            if name not in seen:
                seen.append(name)
    return seen


def is_named(template: MessageTemplate) -> bool:
    if template.parameter_format:
        return template.parameter_format.upper() == "NAMED"
    return any(not name.isdigit() for name in variables(template))


def _fill(text: str, values: dict[str, str]) -> str:
    return _VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def render(template: MessageTemplate, values: dict[str, str]) -> str:
    """The text the customer reads: header, body and footer with the variables filled."""
    parts = [_fill(_text_of(template, kind), values) for kind in _WITH_VARIABLES]
    parts.append(_text_of(template, "FOOTER"))
    return "\n\n".join(part for part in parts if part.strip())


def send_components(template: MessageTemplate, values: dict[str, str]) -> list[dict[str, Any]]:
    """The `components` of the send: one per header or body that has variables, each value a
    text parameter (named ones carry their `parameter_name`)."""
    named = is_named(template)
    out: list[dict[str, Any]] = []
    for kind in _WITH_VARIABLES:
        names = list(dict.fromkeys(_VARIABLE.findall(_text_of(template, kind))))
        if not names:
            continue
        if not named:
            names.sort(key=int)
        parameters = [
            {"type": "text", "parameter_name": name, "text": values[name]}
            if named
            else {"type": "text", "text": values[name]}
            for name in names
        ]
        out.append({"type": kind.lower(), "parameters": parameters})
    return out


def clean_values(template: MessageTemplate, raw: dict[str, Any]) -> dict[str, str]:
    """The manager's values for the template's variables, trimmed; raises `Refused` when one is
    missing or too long (WhatsApp would refuse the send with 132000)."""
    values: dict[str, str] = {}
    for name in variables(template):
        value = " ".join(str(raw.get(name, "") or "").split())
        if not value:
            raise Refused(f"Fill in the variable {{{{{name}}}}}.")
        if len(value) > MAX_VALUE:
            raise Refused(f"The variable {{{{{name}}}}} can be at most {MAX_VALUE} characters.")
        values[name] = value
    return values


def refusal(template: MessageTemplate | None, chat: Chat) -> str:
    """Why this template cannot be sent to the chat's customer now ("" when it can)."""
    if template is None or template.channel_id != chat.channel_id:
        return "This channel has no such template: sync the templates on the channel's page."
    if chat.channel.kind != Channel.Kind.CLOUD_API:
        return "Templates are sent only on WhatsApp Cloud API numbers."
    if template.status != MessageTemplate.Status.APPROVED:
        with translation.override("en"):  # the sentence around it is English
            label = str(MessageTemplate.Status(template.status).label).lower()
        return (
            f"The template {template.name} ({template.language}) is {label}: only an approved "
            "template can be sent."
        )
    proactive = template.category == MessageTemplate.Category.MARKETING or not window.is_open(chat)
    refused = opt_outs.refusal(chat.channel.business_id, chat.customer_key) if proactive else None
    if refused is not None:
        return f"{refused.reason} No template is sent to them."
    return ""


@dataclass(frozen=True)
class Prefill:
    """What the picker fills in for the manager: the customer's name, the bot's last quote."""

    customer_name: str
    quote: str


def prefill(chat: Chat) -> Prefill:
    """The customer's name and the text of the bot's last quote (a reply whose turn computed
    priced lines, `Turn.decision["explained"]["lines"]`), "" when there is none."""
    quote = ""
    turns = (
        Turn.objects.filter(chat_id=chat.pk, reply_message__isnull=False)
        .select_related("reply_message")
        .order_by("-pk")[:20]
    )
    for turn in turns:
        explained = turn.decision.get("explained") if isinstance(turn.decision, dict) else None
        if isinstance(explained, dict) and explained.get("lines") and turn.reply_message:
            quote = turn.reply_message.text
            break
    return Prefill(chat.customer_name.strip(), " ".join(quote.split())[:MAX_VALUE])


def send(
    chat_id: int,
    template: MessageTemplate | None,
    raw_values: dict[str, Any],
    *,
    manager: User | None,
    source: str = "inbox",
) -> SendOutcome:
    """Send the template to the chat's customer as the manager's message; raises `Refused`
    (nothing recorded, nothing sent) when it must not go."""
    chat = Chat.objects.select_related("channel").get(pk=chat_id)
    problem = refusal(template, chat)
    if problem or template is None:
        raise Refused(problem)
    values = clean_values(template, raw_values)
    ownership.manager_replied(chat_id, manager=manager)
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        message = record_outbound(
            chat,
            render(template, values),
            author=Message.Author.MANAGER,
            manager=manager,
            kind=Message.Kind.TEMPLATE,
        )
        message.payload = {
            "source": source,
            "template": {
                "name": template.name,
                "language": template.language,
                "category": template.category,
                "components": send_components(template, values),
            },
        }
        message.save(update_fields=["payload"])
        latest = chat.messages.filter(direction=Message.Direction.INBOUND).aggregate(m=Max("id"))
        chat.answered_up_to = max(chat.answered_up_to, latest["m"] or 0)
        chat.save(update_fields=["answered_up_to"])
    log.info("template.send", extra={"chat_id": chat_id, "template": template.name})
    return deliver_recorded(message)


def set_status(channel_ids: list[int], name: str, language: str, status: str, reason: str) -> int:
    """A status WhatsApp announced for a template (approved, paused, disabled, rejected): the
    rows of these channels (one WABA may serve several numbers) follow. The number updated."""
    if status not in MessageTemplate.Status.values:
        return 0
    rows = MessageTemplate.objects.filter(channel_id__in=channel_ids, name=name)
    if language:
        rows = rows.filter(language=language)
    updated = rows.update(status=status, reason=reason[:200], updated_at=timezone.now())
    if updated:
        log.info("template.status", extra={"template": name, "status": status})
    return updated
