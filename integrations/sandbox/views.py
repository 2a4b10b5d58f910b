"""The sandbox chat page: a business tries its assistant as a customer would, and reviews every
reply (what was decided, why, and what the guardrails said) before going live."""

from __future__ import annotations

import time
import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from inbox.conversations import access, ingest
from inbox.conversations.events import InboundEvent
from inbox.conversations.models import Channel, Chat, HandoffReason, Message, Turn
from inbox.web.why import action_label, backend_label

MAX_TEXT = 4096


def _sandbox_channels(request: HttpRequest) -> list[Channel]:
    return list(
        access.visible_channels(request.user)
        .filter(kind=Channel.Kind.SANDBOX, is_active=True)
        .select_related("business")
    )


def _customer_key(request: HttpRequest) -> str:
    return f"sandbox-user-{request.user.pk}"


def _channel(request: HttpRequest, channel_id: int) -> Channel:
    for channel in _sandbox_channels(request):
        if channel.pk == channel_id:
            return channel
    raise Http404("no such sandbox channel")


@login_required
@require_GET
def sandbox(request: HttpRequest) -> HttpResponse:
    channels = _sandbox_channels(request)
    if len(channels) == 1:
        return redirect("sandbox_chat", channel_id=channels[0].pk)
    return render(request, "sandbox/choose.html", {"channels": channels})


@login_required
@require_GET
def sandbox_chat(request: HttpRequest, channel_id: int) -> HttpResponse:
    channel = _channel(request, channel_id)
    template = (
        "sandbox/_conversation.html" if request.headers.get("HX-Request") else "sandbox/chat.html"
    )
    return render(request, template, _conversation(request, channel))


@login_required
@require_POST
def sandbox_send(request: HttpRequest, channel_id: int) -> HttpResponse:
    channel = _channel(request, channel_id)
    text = request.POST.get("text", "").strip()[:MAX_TEXT]
    if text:
        # The same path as a real webhook: dedup, the ingest queue, the consumer, the turn.
        ingest.enqueue(
            [
                InboundEvent(
                    channel_id=channel.pk,
                    provider_message_id=f"sandbox-{uuid.uuid4().hex}",
                    chat_key=_customer_key(request),
                    from_me=False,
                    kind="text",
                    text=text,
                    media=None,
                    provider_ts=int(time.time()),
                    customer_name=f"Sandbox ({request.user.get_username()})",
                )
            ]
        )
    if request.headers.get("HX-Request"):
        return render(request, "sandbox/_conversation.html", _conversation(request, channel))
    return redirect("sandbox_chat", channel_id=channel.pk)


@login_required
@require_POST
def sandbox_reset(request: HttpRequest, channel_id: int) -> HttpResponse:
    """Start over: the sandbox customer's chat is deleted (only the user's own sandbox chat)."""
    channel = _channel(request, channel_id)
    Chat.objects.filter(channel=channel, customer_key=_customer_key(request)).delete()
    return redirect("sandbox_chat", channel_id=channel.pk)


def _conversation(request: HttpRequest, channel: Channel) -> dict[str, object]:
    chat = Chat.objects.filter(channel=channel, customer_key=_customer_key(request)).first()
    messages: list[Message] = []
    turns: dict[int, Turn] = {}
    if chat is not None:
        messages = list(chat.messages.exclude(direction=Message.Direction.INTERNAL).order_by("pk"))
        for turn in chat.turns.exclude(reply_message=None):
            if turn.reply_message_id is not None:
                turns[turn.reply_message_id] = turn
    rows = [
        (message, turns.get(message.pk), _review(turns.get(message.pk))) for message in messages
    ]
    return {"channel": channel, "chat": chat, "rows": rows}


def _review(turn: Turn | None) -> dict[str, str]:
    """What the turn decided, in the reader's words (the Why panel's labels)."""
    if turn is None:
        return {}
    return {
        "action": action_label(turn.action),
        "reason": HandoffReason.label_for(turn.reason) if turn.reason else "",
        "backend": backend_label(turn.backend),
    }
