"""The inbox's way past a closed WhatsApp window: the template picker (choose an approved
template, fill its variables, see the text the customer will read, send) and the answer kept
for the customer's return. Thin: `template_actions` does the work; the answers are the same
composer fragment the reply form gets."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from inbox.conversations import templates
from inbox.web import actions, template_actions
from inbox.web.params import parse_id
from inbox.web.views import _composer_response, _run, request_user

VALUE_PREFIX = "var_"


@login_required
@require_GET
def picker(request: HttpRequest, chat_id: int) -> HttpResponse:
    """The picker: the approved templates; the chosen one's variables, prefilled (or as typed:
    the preview asks again with the values) and its rendered text."""
    try:
        chat, choices = template_actions.choices(request_user(request), chat_id)
    except actions.ChatNotFound as exc:
        raise Http404("no such chat") from exc
    chosen_id = parse_id(request.GET.get("template"))
    chosen = next((c for c in choices if c.template.pk == chosen_id), None)
    if chosen is None and choices:
        chosen = choices[0]
    values: dict[str, str] = {}
    if chosen is not None:
        typed = {name: request.GET.get(VALUE_PREFIX + name) for name in chosen.variables}
        values = {n: (v if v is not None else chosen.values[n]) for n, v in typed.items()}
    preview = templates.render(chosen.template, values) if chosen else ""
    return render(
        request,
        "inbox/_template_picker.html",
        {
            "chat": chat,
            "choices": choices,
            "chosen": chosen,
            "fields": list(values.items()),
            "preview": preview,
            "key": uuid.uuid4().hex,
        },
    )


@login_required
@require_POST
def send(request: HttpRequest, chat_id: int) -> HttpResponse:
    name = request.POST.get("name", "")
    language = request.POST.get("language", "")
    values = {
        key.removeprefix(VALUE_PREFIX): value
        for key, value in request.POST.items()
        if key.startswith(VALUE_PREFIX)
    }
    key = request.POST.get("key", "")
    result = _run(
        request,
        lambda user, cid: template_actions.send_template(
            user, cid, name, language, values, key=key
        ),
        chat_id,
    )
    return _composer_response(request, result, "reply", "")


@login_required
@require_POST
def keep_pending(request: HttpRequest, chat_id: int) -> HttpResponse:
    text = request.POST.get("text", "")
    result = _run(
        request, lambda user, cid: template_actions.keep_pending(user, cid, text), chat_id
    )
    return _composer_response(request, result, "reply", text if result.error else "")


@login_required
@require_POST
def cancel_pending(request: HttpRequest, chat_id: int) -> HttpResponse:
    result = _run(request, template_actions.cancel_pending, chat_id)
    return _composer_response(request, result, "reply", "")
