"""The inbox page's Resolve / Snooze / Reopen buttons and the assignee's read marker. Thin:
parse, call `inbox.web.status_actions`, answer with the chat's header like the other actions."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from inbox.web import actions, status_actions
from inbox.web.views import header_response, request_user


def _run(request: HttpRequest, action: Any, chat_id: int, *args: Any) -> HttpResponse:
    try:
        result: actions.ActionResult = action(request_user(request), chat_id, *args)
    except actions.ChatNotFound as exc:
        raise Http404("no such chat") from exc
    return header_response(request, result)


@login_required
@require_POST
def resolve(request: HttpRequest, chat_id: int) -> HttpResponse:
    return _run(request, status_actions.resolve, chat_id)


@login_required
@require_POST
def snooze(request: HttpRequest, chat_id: int) -> HttpResponse:
    user = request_user(request)
    chat = actions.visible_or_none(user, chat_id)
    if chat is None:
        raise Http404("no such chat")
    until = status_actions.snooze_end(request.POST.get("until", ""), chat.channel.business.timezone)
    return _run(request, status_actions.snooze, chat_id, until)


@login_required
@require_POST
def reopen(request: HttpRequest, chat_id: int) -> HttpResponse:
    return _run(request, status_actions.reopen, chat_id)
