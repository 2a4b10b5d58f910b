"""Manager-facing pages. Thin: parse the request, ask `inbox.conversations.access`, call
`inbox.web.actions`, render the same partials the websocket pushes."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST

from inbox.conversations import access, reading
from inbox.conversations.models import Alert, Chat
from inbox.upkeep import alerts
from inbox.web import actions, contact, dashboard, fragments
from inbox.web.live import realtime
from inbox.web.params import parse_id


def request_user(request: HttpRequest) -> User:
    assert isinstance(request.user, User)
    return request.user


_user = request_user


def _is_htmx(request: HttpRequest) -> bool:
    return bool(getattr(request, "htmx", False))


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return redirect("chat_list")


def _sequences(user: User) -> dict[str, int]:
    """Read before the data: an event after this point is either in the page or replayed."""
    return {str(b): realtime.current_sequence(b) for b in access.visible_business_ids(user)}


def _alerts(user: User) -> list[Alert]:
    """Open alerts of the user's businesses and the installation-wide ones, once each."""
    seen: dict[int, Alert] = {}
    for business in access.visible_businesses(user):
        for alert in alerts.active_alerts(business.pk):
            seen.setdefault(alert.pk, alert)
    return sorted(seen.values(), key=lambda alert: alert.raised_at, reverse=True)


def _list_context(request: HttpRequest) -> dict[str, Any]:
    """The chat list's rows from the requested offset, and the query of its next page."""
    filters = dashboard.ListFilters.from_query(request.GET)
    offset = dashboard.ListFilters.offset_from_query(request.GET)
    page = dashboard.chat_page(_user(request), filters, offset)
    return {
        "rows": page.rows,
        "hits": dashboard.message_hits(_user(request), filters) if not offset else [],
        "filters": filters,
        "list_page": page,
        "more_query": filters.query(page.next_offset) if page.next_offset else "",
    }


def _page_context(request: HttpRequest, chat: Chat | None) -> dict[str, Any]:
    user = _user(request)
    seq = _sequences(user)
    context: dict[str, Any] = {
        **_list_context(request),
        "states": dashboard.STATES,
        "views": dashboard.VIEWS,
        "statuses": dashboard.STATUSES,
        "channels": list(access.visible_channels(user).order_by("name")),
        "labels": dashboard.visible_labels(user),
        "seq_json": json.dumps(seq),
        "pending": dashboard.pending_count(user),
        "open_chat": chat,
        "is_admin": access.is_any_business_admin(user),
        "alerts": _alerts(user),
    }
    if chat is not None:
        view = dashboard.chat_view(chat, parse_id(request.GET.get("message")))
        context.update(
            view=view,
            contact=contact.contact_card(user, chat),
            assignees=list(access.assignable_memberships(chat)),
            composer_key=uuid.uuid4().hex,
        )
    return context


@login_required
@require_GET
def chat_list(request: HttpRequest) -> HttpResponse:
    target = request.headers.get("HX-Target") if _is_htmx(request) else None
    if target == "chat-list":
        return render(request, "inbox/_chat_list.html", _list_context(request))
    if target == "chat-list-more":
        return render(request, "inbox/_chat_list_page.html", _list_context(request))
    return render(request, "inbox/inbox.html", _page_context(request, None))


def _visible_chat(request: HttpRequest, chat_id: int) -> Chat:
    chat = access.visible_chat(_user(request), chat_id)
    if chat is None:
        raise Http404("no such chat")
    return chat


@login_required
@require_GET
def chat_detail(request: HttpRequest, chat_id: int) -> HttpResponse:
    chat = _visible_chat(request, chat_id)
    actions.mark_read(_user(request), chat)
    return render(request, "inbox/inbox.html", _page_context(request, chat))


@login_required
@require_GET
def chat_read_count(request: HttpRequest, chat_id: int) -> HttpResponse:
    """This manager's read count of one chat, for a pushed row the page had not shown yet (its
    unread badge is the row's data-inbound minus this)."""
    chat = _visible_chat(request, chat_id)
    read = reading.read_counts(_user(request).pk, [chat.pk])[chat.pk]
    return JsonResponse({"chat": chat.pk, "read": read})


@login_required
@require_GET
def chat_earlier(request: HttpRequest, chat_id: int) -> HttpResponse:
    """Older messages of a chat (the "show earlier" link)."""
    chat = _visible_chat(request, chat_id)
    items, has_earlier = dashboard.recent_messages(chat, parse_id(request.GET.get("before")))
    return render(
        request,
        "inbox/_earlier.html",
        {"chat": chat, "items": items, "has_earlier": has_earlier},
    )


@login_required
@require_GET
def chat_history(request: HttpRequest, chat_id: int) -> HttpResponse:
    chat = _visible_chat(request, chat_id)
    return render(
        request,
        "inbox/history.html",
        {"chat": chat, "transitions": dashboard.transitions(chat)},
    )


def header_response(request: HttpRequest, result: actions.ActionResult) -> HttpResponse:
    """The loser of a race and the winner both get the chat's current header; the notice says
    what happened. It goes out of band, into a box beside the header, so the live update that
    soon replaces the header (the winner's change) leaves it until the manager dismisses it or
    acts again."""
    if not _is_htmx(request):
        if result.error:
            messages.error(request, result.error)
        elif result.notice:
            messages.info(request, result.notice)
        return redirect("chat_detail", chat_id=result.chat.pk)
    context = {**fragments.header_context(result.chat), "notice": result.notice or result.error}
    header = render_to_string("inbox/_chat_header.html", context, request=request)
    notice = render_to_string("inbox/_chat_notice.html", {**context, "oob": True}, request=request)
    return HttpResponse(header + notice)


_header_response = header_response


def _run(request: HttpRequest, action: Any, chat_id: int, *args: Any) -> actions.ActionResult:
    try:
        result: actions.ActionResult = action(_user(request), chat_id, *args)
    except actions.ChatNotFound as exc:
        raise Http404("no such chat") from exc
    return result


@login_required
@require_POST
def take_over(request: HttpRequest, chat_id: int) -> HttpResponse:
    return _header_response(request, _run(request, actions.take_over, chat_id))


@login_required
@require_POST
def release(request: HttpRequest, chat_id: int) -> HttpResponse:
    return _header_response(request, _run(request, actions.release, chat_id))


@login_required
@require_POST
def assign(request: HttpRequest, chat_id: int) -> HttpResponse:
    raw = request.POST.get("assignee", "").strip()
    assignee = parse_id(raw)
    if raw and assignee is None:
        raise Http404("no such manager")
    return _header_response(request, _run(request, actions.assign, chat_id, assignee))


def _composer_response(
    request: HttpRequest,
    result: actions.ActionResult,
    mode: str,
    text: str,
    *,
    attachment: bool = False,
) -> HttpResponse:
    if not _is_htmx(request):
        if result.error:
            messages.error(request, result.error)
        return redirect("chat_detail", chat_id=result.chat.pk)
    context = {
        "chat": result.chat,
        "composer_key": uuid.uuid4().hex,
        "mode": mode,
        "error": result.error,
        "notice": result.notice,
        # A reply that was refused (empty, too long) keeps its text; a failed send is in the
        # conversation with its error, so the box is cleared.
        "text": text if result.error and result.message_id is None else "",
        "holder": result.ask_take_from,
        # A refused file is not sent back by the browser: the manager attaches it again.
        "reattach": attachment and not result.ok and result.message_id is None,
    }
    return render(request, "inbox/_composer.html", context)


@login_required
@require_POST
def reply(request: HttpRequest, chat_id: int) -> HttpResponse:
    text = request.POST.get("text", "")
    key = request.POST.get("key", "")
    take_from = parse_id(request.POST.get("take_from"))
    upload = request.FILES.get("attachment")
    if upload is not None:  # a file: the text box is its caption
        result = _run(
            request,
            lambda user, cid: actions.send_attachment(
                user, cid, upload, text, key=key, ask_holder=True, take_from=take_from
            ),
            chat_id,
        )
        return _composer_response(request, result, "reply", text, attachment=True)
    result = _run(
        request,
        lambda user, cid: actions.reply(
            user, cid, text, key=key, ask_holder=True, take_from=take_from
        ),
        chat_id,
    )
    return _composer_response(request, result, "reply", text)


@login_required
@require_POST
def resend(request: HttpRequest, chat_id: int, message_id: int) -> HttpResponse:
    """Send a failed message again; the answer is the failed message's fragment (now naming
    its successor, or saying why it was not sent again). The new message arrives by the push."""
    try:
        result = _run(request, actions.resend_message, chat_id, message_id)
    except actions.MessageNotFound as exc:
        raise Http404("no such message") from exc
    # A refusal is an English constant (the API sends it so): shown in the member's language.
    problem = gettext(result.error) if result.error else ""
    if not _is_htmx(request):
        if problem:
            messages.error(request, problem)
        return redirect("chat_detail", chat_id=chat_id)
    item = fragments.message_to_render(message_id)
    if item is None:
        raise Http404("no such message")
    return HttpResponse(fragments.message_html(item, problem=problem))


@login_required
@require_POST
def note(request: HttpRequest, chat_id: int) -> HttpResponse:
    text = request.POST.get("text", "")
    key = request.POST.get("key", "")
    result = _run(request, lambda user, cid: actions.note(user, cid, text, key=key), chat_id)
    return _composer_response(request, result, "note", text)


@login_required
@require_GET
def events(request: HttpRequest) -> HttpResponse:
    """What a page missed since sequence `since` of one business: the events (filtered to
    what this user may see) or `reset` when the log no longer reaches back that far."""
    user = _user(request)
    business_id = parse_id(request.GET.get("business"))
    since = parse_id(request.GET.get("since"))
    if business_id is None or since is None:
        raise Http404("bad query")
    if business_id not in access.visible_business_ids(user):
        raise Http404("no such business")
    chat_id = parse_id(request.GET.get("chat"))
    if chat_id is not None and not access.can_see_chat(user, chat_id):
        chat_id = None
    found, current, complete = realtime.replay(business_id, since)
    visible = access.visible_channel_ids(user)
    out: list[dict[str, Any]] = []
    for event in found:
        if event.get("channel_id") is not None and event["channel_id"] not in visible:
            out.append({"type": "skip", "seq": event["seq"], "business": business_id})
            continue
        shown = [
            f
            for f in event.get("fragments", [])
            if f["scope"] == "list" or event.get("chat_id") == chat_id
        ]
        out.append(
            {
                "type": "event",
                "seq": event["seq"],
                "business": business_id,
                "event": event["event"],
                "chat": event.get("chat_id"),
                "data": event.get("data", {}),
                "fragments": shown,
            }
        )
    return JsonResponse(
        {
            "events": out,
            "seq": current,
            "reset": not complete,
            "pending": dashboard.pending_count(user),
        }
    )
