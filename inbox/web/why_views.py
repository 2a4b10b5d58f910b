"""The Why panel of a bot message and the flag a manager leaves on it. Thin: parse, read through
`inbox.web.why` / write through `inbox.conversations.flags` (both check the tenant), render.
A message of another business's chat, or not the bot's, is a 404."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from inbox.conversations import flags
from inbox.conversations.models import MessageFlag
from inbox.web import why


class FlagForm(forms.Form):
    category = forms.ChoiceField(choices=MessageFlag.Category.choices)
    note = forms.CharField(required=False, max_length=flags.MAX_NOTE, widget=forms.Textarea)


def _panel(
    request: HttpRequest, chat_id: int, message_id: int, form: FlagForm, *, flagged: bool = False
) -> HttpResponse:
    try:
        facts = why.why_for(request.user, chat_id, message_id)
    except flags.MessageNotFound as exc:
        raise Http404("no such message") from exc
    return render(
        request,
        "inbox/_why.html",
        {"why": facts, "form": form, "flagged": flagged},
    )


@login_required
@require_GET
def message_why(request: HttpRequest, chat_id: int, message_id: int) -> HttpResponse:
    """What the assistant read, computed and checked for this reply, and the flag form."""
    return _panel(request, chat_id, message_id, FlagForm())


@login_required
@require_POST
def message_flag(request: HttpRequest, chat_id: int, message_id: int) -> HttpResponse:
    """Flag the bot message as wrong; answers the panel again (with the flag on it)."""
    form = FlagForm(request.POST)
    if not form.is_valid():
        return _panel(request, chat_id, message_id, form)
    try:
        flags.flag_message(
            request.user,
            chat_id,
            message_id,
            MessageFlag.Category(form.cleaned_data["category"]),
            form.cleaned_data["note"],
        )
    except flags.MessageNotFound as exc:
        raise Http404("no such message") from exc
    if not getattr(request, "htmx", False):
        return redirect("chat_detail", chat_id=chat_id)
    return _panel(request, chat_id, message_id, FlagForm(), flagged=True)
