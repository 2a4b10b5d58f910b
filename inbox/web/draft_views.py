"""A bot reply waiting for approval, from the inbox: Approve, Edit and send, Reject in place in
the chat (the draft's slot is swapped by htmx), and the "To approve" list. Thin: the access
check, then `inbox.conversations.drafts`."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from inbox.conversations import access, drafts
from inbox.conversations.models import Chat
from inbox.web import dashboard
from inbox.web.params import parse_id
from inbox.web.views import request_user

NOTICES: dict[str, str] = {
    "sent": "Sent to the customer.",
    "rejected": "Not sent: the chat is waiting for a person to answer.",
    "no_draft": "This reply is no longer waiting: a newer message arrived, someone else "
    "decided it, or a person took the chat.",
    "stale": "Not sent: the chat moved on (a newer message, or a person took it).",
    "empty": "The reply is empty.",
    "not_sent": "The reply could not be sent.",
}


def _chat(request: HttpRequest, chat_id: int) -> Chat:
    chat = access.visible_chat(request_user(request), chat_id)
    if chat is None:
        raise Http404("no such chat")
    return chat


def _answer(request: HttpRequest, chat: Chat, outcome: drafts.DecideOutcome) -> HttpResponse:
    notice = outcome.error or NOTICES[outcome.reason]
    if not getattr(request, "htmx", False):
        (messages.info if outcome.ok else messages.error)(request, notice)
        return redirect("chat_detail", chat_id=chat.pk)
    context = {"chat": chat, "draft": drafts.current_for(chat.pk), "draft_notice": notice}
    return render(request, "inbox/_draft.html", context)


@login_required
@require_POST
def approve(request: HttpRequest, chat_id: int) -> HttpResponse:
    """Send the draft as is, or the edited text when the form carries one."""
    chat = _chat(request, chat_id)
    text = request.POST.get("text")
    outcome = drafts.approve(
        chat.pk,
        manager=request_user(request),
        text=text,
        draft_id=parse_id(request.POST.get("draft")),
    )
    return _answer(request, chat, outcome)


@login_required
@require_POST
def reject(request: HttpRequest, chat_id: int) -> HttpResponse:
    chat = _chat(request, chat_id)
    outcome = drafts.reject(
        chat.pk, manager=request_user(request), draft_id=parse_id(request.POST.get("draft"))
    )
    return _answer(request, chat, outcome)


@login_required
@require_GET
def to_approve(request: HttpRequest) -> HttpResponse:
    """Every bot reply waiting for a person in the chats this manager sees, the oldest first."""
    found = list(dashboard.drafts_to_approve(request_user(request))[:200])
    return render(request, "inbox/to_approve.html", {"drafts": found})


@login_required
@require_GET
def waiting_count(request: HttpRequest) -> JsonResponse:
    """The menu's count, asked again when a pushed event says a draft changed."""
    return JsonResponse({"count": dashboard.drafts_to_approve(request_user(request)).count()})
