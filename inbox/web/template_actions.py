"""What a manager does past WhatsApp's 24-hour window, from the inbox or the JSON API: send an
approved template, keep a free-text answer for the customer's return, take it back.

Like `actions`: the chat must be visible to the user (else `actions.ChatNotFound`, a 404), the
rules are the core's (`inbox.conversations.templates`, `inbox.conversations.pending_replies`),
and a refusal comes back as the result's `error`, with nothing sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from inbox.conversations import assignment, pending_replies, templates, window
from inbox.conversations.models import Chat, MessageTemplate
from inbox.web import actions
from inbox.web.actions import ActionResult


@dataclass(frozen=True)
class Choice:
    """A template the manager may pick, with its variables and the values prefilled."""

    template: MessageTemplate
    variables: list[str]
    values: dict[str, str]


def _chat(user: User, chat_id: int) -> Chat:
    chat = actions.visible_or_none(user, chat_id)
    if chat is None:
        raise actions.ChatNotFound(chat_id)
    return chat


def choices(user: User, chat_id: int) -> tuple[Chat, list[Choice]]:
    """The chat's channel's approved templates, each with its variables prefilled: a variable
    named like a name (`name`, `first_name`, `customer_name`) or the first positional one gets
    the customer's name, one named like a quote (`quote`, `offer`, `price`) the bot's last
    quote."""
    chat = _chat(user, chat_id)
    known = templates.prefill(chat)
    out = []
    for template in templates.approved(chat.channel_id):
        names = templates.variables(template)
        values = {name: _prefill(name, names, known) for name in names}
        out.append(Choice(template, names, values))
    return chat, out


def _prefill(name: str, names: list[str], known: templates.Prefill) -> str:
    lowered = name.lower()
    if "name" in lowered or (name.isdigit() and name == names[0]):
        return known.customer_name
    if any(word in lowered for word in ("quote", "offer", "price", "total")):
        return known.quote
    return ""


def send_template(
    user: User,
    chat_id: int,
    name: str,
    language: str,
    values: dict[str, Any],
    *,
    key: str = "",
) -> ActionResult:
    """Send the named template with the manager's values; the chat becomes theirs, as with a
    reply (assigned to them when nobody has it)."""
    chat = _chat(user, chat_id)
    template = templates.find(chat.channel_id, name, language)
    problem = templates.refusal(template, chat)
    if problem:
        return ActionResult(chat, False, error=problem)
    if not actions._first_use(user, chat.pk, "template", key):
        sent_already = "This template was already sent."
        return ActionResult(actions.reload_chat(chat.pk), False, notice=sent_already)
    try:
        outcome = templates.send(chat.pk, template, values, manager=user)
    except templates.Refused as exc:
        return ActionResult(chat, False, error=str(exc))
    assignment.assign(chat.pk, user.pk, only_if_unassigned=True)
    chat = actions.reload_chat(chat.pk)
    if not outcome.sent:
        return ActionResult(
            chat, True, error=f"Not delivered: {outcome.error or outcome.reason}",
            message_id=outcome.message_id,
        )  # fmt: skip
    return ActionResult(chat, True, notice="Template sent.", message_id=outcome.message_id)


def keep_pending(user: User, chat_id: int, text: str) -> ActionResult:
    """Keep a free-text answer for the customer's return (the window is closed); the chat
    becomes this manager's, so the answer goes out when the customer writes."""
    chat = _chat(user, chat_id)
    text = (text or "").replace("\r\n", "\n").strip()
    if not text:
        return ActionResult(chat, False, error="Write the answer first.")
    if len(text) > actions.MAX_TEXT:
        too_long = f"A message can be at most {actions.MAX_TEXT} characters."
        return ActionResult(chat, False, error=too_long)
    if window.is_open(chat):
        return ActionResult(chat, False, error="The window is open: send the reply itself.")
    kept = pending_replies.keep(chat.pk, text, manager=user)
    assignment.assign(chat.pk, user.pk)
    notice = pending_replies.SHOWN_AS
    if kept.reengaged:
        notice += " The customer was invited back with a template."
    elif kept.notice:
        notice += " " + kept.notice
    return ActionResult(actions.reload_chat(chat.pk), True, notice=notice)


def cancel_pending(user: User, chat_id: int) -> ActionResult:
    chat = _chat(user, chat_id)
    if not pending_replies.cancel(chat.pk):
        return ActionResult(chat, False, notice="No answer was waiting.")
    return ActionResult(actions.reload_chat(chat.pk), True, notice="The kept answer was removed.")
