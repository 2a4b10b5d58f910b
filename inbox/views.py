"""Manager-facing pages. Thin: parse the request, ask `inbox.access`, render."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from inbox import access


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return redirect("chat_list")


@login_required
@require_GET
def chat_list(request: HttpRequest) -> HttpResponse:
    chats = (
        access.visible_chats(request.user)
        .select_related("channel", "channel__business")
        .order_by("-last_message_at")[:200]
    )
    return render(request, "inbox/chat_list.html", {"chats": chats})
