"""The channel page's "Message templates" box: "Sync templates" now, and the template that
invites a customer back when a manager answers after the window closed. Here, not in the web
layer, because the sync speaks to the Graph API (the web layer imports no integration)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext
from django.views.decorators.http import require_POST

from inbox.conversations import templates
from inbox.conversations.models import Channel, MessageTemplate
from inbox.web.params import parse_id
from inbox.web.settings.admin_pages import _administered_channel
from integrations.whatsapp import template_sync


@login_required
@require_POST
def sync_now(request: HttpRequest, channel_id: int) -> HttpResponse:
    channel = _administered_channel(request, channel_id)
    if channel.kind != Channel.Kind.CLOUD_API:
        messages.error(request, gettext("Only WhatsApp Cloud API numbers have message templates."))
        return redirect("settings_channel", channel_id=channel.pk)
    try:
        result = template_sync.sync(channel)
    except template_sync.SyncError as exc:
        messages.error(request, gettext("Templates not synced: %(why)s") % {"why": exc})
    else:
        messages.success(
            request,
            gettext("Synced %(count)s templates from WhatsApp.") % {"count": result.stored},
        )
    return redirect("settings_channel", channel_id=channel.pk)


@login_required
@require_POST
def choose_reengage(request: HttpRequest, channel_id: int) -> HttpResponse:
    """`template` is "<id>" of an approved UTILITY template of the channel, or "" for none."""
    channel = _administered_channel(request, channel_id)
    chosen = request.POST.get("template", "")
    template = None
    if chosen:
        utility = templates.approved(channel).filter(category=MessageTemplate.Category.UTILITY)
        template = utility.filter(pk=parse_id(chosen) or 0).first()
        if template is None:
            messages.error(request, gettext("Choose an approved utility template of this channel."))
            return redirect("settings_channel", channel_id=channel.pk)
    channel.reengage_template_name = template.name if template else ""
    channel.reengage_template_language = template.language if template else ""
    channel.save(update_fields=["reengage_template_name", "reengage_template_language"])
    messages.success(
        request,
        gettext("Answers kept after the window closed invite the customer back with %(template)s.")
        % {"template": template}
        if template
        else gettext("No template invites the customer back; kept answers wait for them."),
    )
    return redirect("settings_channel", channel_id=channel.pk)
