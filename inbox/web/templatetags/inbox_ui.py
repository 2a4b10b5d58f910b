"""Small presentation helpers for the inbox templates (labels, transcript words, media URLs)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import template
from django.urls import reverse
from django.utils.functional import Promise
from django.utils.safestring import SafeString
from django.utils.text import format_lazy
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from inbox.conversations import access, delivery_status, drafts, names
from inbox.conversations.models import Chat, Draft, HandoffReason, Membership, Message
from inbox.web import dashboard, local_language

register = template.Library()

KIND_PREVIEW: dict[str, str | Promise] = {
    Message.Kind.VOICE: format_lazy("🎤 {}", _("Voice note")),
    Message.Kind.AUDIO: format_lazy("🎵 {}", _("Audio")),
    Message.Kind.IMAGE: format_lazy("📷 {}", _("Photo")),
    Message.Kind.DOCUMENT: format_lazy("📄 {}", _("Document")),
    Message.Kind.VIDEO: format_lazy("🎬 {}", _("Video")),
    Message.Kind.STICKER: _("Sticker"),
    Message.Kind.LOCATION: format_lazy("📍 {}", _("Location")),
    Message.Kind.CONTACTS: format_lazy("👤 {}", _("Contact")),
    Message.Kind.REACTION: _("Reaction"),
    Message.Kind.UNSUPPORTED: _("Unsupported message"),
}


@register.filter
def author_label(message: Message) -> str:
    """Who wrote it, as a manager reads it: the customer's name, the assistant, which manager,
    or a manager writing from the phone."""
    if message.author == Message.Author.CUSTOMER:
        chat = message.chat
        shown = chat.customer_name or chat.customer_phone or chat.customer_username
        return shown or gettext("Customer")
    if message.author == Message.Author.BOT:
        return gettext("Assistant")
    if message.author == Message.Author.PHONE:
        return gettext("Manager from the phone")
    if message.author == Message.Author.MANAGER:
        return names.display_name(message.sent_by, message.channel.business_id, gettext("Manager"))
    return gettext("System")


@register.filter
def assignee_name(chat: Chat) -> str:
    """The name the chat's business shows of its assignee ('' when nobody has it)."""
    return names.display_name(chat.assigned_to, chat.channel.business_id)


@register.filter
def team_name(user: Any, chat: Chat) -> str:
    """The name the chat's business shows of `user` (a manager the page names)."""
    return names.display_name(user, chat.channel.business_id)


@register.filter
def member_name(membership: Membership) -> str:
    return names.of_membership(membership)


@register.filter
def preview(message: Message | None) -> str:
    if message is None:
        return ""
    if message.payload.get("revoked"):
        return gettext("Message deleted")
    label = str(KIND_PREVIEW.get(message.kind, ""))
    text = message.content
    body = f"{label}: {text}" if label and text else (label or text)
    if message.author != Message.Author.CUSTOMER:
        body = f"{author_label(message)}: {body}"
    return body


@register.filter
def reason_label(reason: str) -> str:
    """A handoff reason in a manager's words: `HandoffReason`'s, or a business's own code's."""
    return HandoffReason.label_for(reason)


@register.filter
def media_url(message: Message) -> str:
    """The permission-checked playback/download URL (served by inbox/web/media.py)."""
    return reverse("message_media", kwargs={"message_id": message.pk})


# `iso` and `clock` are `date:"c"` and `date:"H:i"` without Django's format machinery (the
# format-name look-up and the language checks behind it: ~100 µs a call on these cores). Every
# chat row and message pushed to the dashboards carries two of them, 20 chats a burst.


@register.filter(expects_localtime=True)
def iso(value: datetime | None) -> str:
    """The time in ISO 8601, in the current (the business's) zone: `date:"c"`."""
    return value.isoformat() if isinstance(value, datetime) else ""


@register.filter(expects_localtime=True)
def clock(value: datetime | None) -> str:
    """Hours and minutes, 24-hour, in the current zone: `date:"H:i"`."""
    return value.strftime("%H:%M") if isinstance(value, datetime) else ""


@register.filter
def sort_key(chat: Chat) -> str:
    return dashboard.sort_key(chat)


@register.filter
def facts_extra(facts: Any) -> list[tuple[str, str]]:
    """Facts other than name, city and items, as label/value pairs."""
    if not isinstance(facts, dict):
        return []
    skip = {"name", "city", "items"}
    return [
        (key.replace("_", " ").capitalize(), str(value))
        for key, value in facts.items()
        if key not in skip and value not in (None, "", [], {})
    ]


@register.filter
def qty(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value)


@register.filter
def draft_why(draft: Draft) -> str:
    return drafts.why(draft)


@register.simple_tag
def drafts_waiting(user: Any) -> int:
    """The nav's count of bot replies waiting for this user's approval, on page load."""
    if not getattr(user, "is_authenticated", False):
        return 0
    return dashboard.drafts_to_approve(user).count()


@register.simple_tag
def business_admin(user: Any) -> bool:
    """Whether to show the settings pages in the menu (the views check again)."""
    return bool(access.is_any_business_admin(user))


@register.filter
def blocked_reply(details: Any) -> str:
    """The reply a guardrail stopped, whichever key the turn stored it under."""
    if not isinstance(details, dict):
        return ""
    for key in ("blocked_reply", "reply_to_customer", "reply"):
        if isinstance(details.get(key), str) and details[key]:
            return str(details[key])
    return ""


@register.filter
def findings(details: Any) -> list[str]:
    """What the guardrails found, as text (strings, or dicts with a text/detail/message)."""
    if not isinstance(details, dict):
        return []
    raw = details.get("findings") or details.get("guardrail_findings") or details.get("blocked")
    out: list[str] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict):
            text = item.get("text") or item.get("detail") or item.get("message") or ""
            kind = item.get("kind") or item.get("rule") or ""
            out.append(f"{kind}: {text}" if kind and text else str(text or kind))
        elif item:
            out.append(str(item))
    return out


@register.filter
def undeliverable(chat: Chat) -> bool:
    """WhatsApp said this customer cannot receive messages, and they have not written since."""
    return delivery_status.undeliverable(chat)


@register.simple_tag
def script_words() -> SafeString:
    """The inbox scripts' words in the reader's language (inbox/web/local_language.py)."""
    return local_language.script_words()
