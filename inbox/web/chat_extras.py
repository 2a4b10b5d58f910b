"""Views for labels on a chat, the composer's canned replies and the contact's opt-out. Thin:
parse, check through `inbox.conversations.access` (inside the called functions), render."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from inbox.conversations import access, opt_outs
from inbox.conversations.models import OptOut
from inbox.web import canned, labels
from inbox.web.params import parse_id


def _id(raw: str) -> int:
    parsed = parse_id(raw)
    if parsed is None:
        raise Http404("bad id")
    return parsed


@login_required
@require_POST
def chat_label(request: HttpRequest, chat_id: int) -> HttpResponse:
    """Add (`label`) or remove (`remove`) a label; answers the chat's label bar."""
    try:
        if request.POST.get("remove"):
            chat = labels.remove_label(request.user, chat_id, _id(request.POST["remove"]))
        else:
            chat = labels.add_label(request.user, chat_id, _id(request.POST.get("label", "")))
    except labels.LabelNotFound as exc:
        raise Http404(str(exc)) from exc
    if not getattr(request, "htmx", False):
        return redirect("chat_detail", chat_id=chat.pk)
    return render(request, "inbox/_chat_labels.html", {"chat": chat})


@login_required
@require_GET
def canned_replies(request: HttpRequest, chat_id: int) -> JsonResponse:
    """The canned replies the composer of this chat offers, filled in for it."""
    chat = access.visible_chat(request.user, chat_id)
    if chat is None:
        raise Http404("no such chat")
    return JsonResponse({"replies": canned.offered(request.user, chat)})


@login_required
@require_POST
def chat_opt_out(request: HttpRequest, chat_id: int) -> HttpResponse:
    """Clear (`action=clear`, recorded with who did it) or record (`action=record`) the chat's
    customer on the business's opt-out register; only for a chat the user may see."""
    chat = access.visible_chat(request.user, chat_id)
    if chat is None:
        raise Http404("no such chat")
    business_id = chat.channel.business_id
    action = request.POST.get("action", "")
    if action == "clear":
        opt_outs.clear(business_id, chat.customer_key, request.user)
    elif action == "record":
        opt_outs.record(business_id, chat.customer_key, OptOut.Source.MANAGER)
    else:
        return HttpResponse("unknown action", status=400)
    return redirect("chat_detail", chat_id=chat.pk)
