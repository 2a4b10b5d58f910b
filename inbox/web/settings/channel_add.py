"""Adding a channel from the web, as `manage.py create_channel` does from the command line: the
admin picks the kind (each explained in a sentence), then fills only that kind's fields, in the
words of the channel page (`channel_settings.ChannelSettingsForm`: write-only secrets, the
outbound-address rule on a gateway URL, a number another channel has refused in neutral words).
The new channel's page then shows where to point the provider (`connect_box`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.functional import Promise
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods

from inbox.conversations.models import Channel
from inbox.web.administered import administered_business
from inbox.web.settings.channel_settings import TRANSPORT_FIELDS, ChannelSettingsForm

# The kinds an admin adds, in the order offered, with what each one is.
KIND_CHOICES: tuple[tuple[str, str | Promise], ...] = (
    (
        Channel.Kind.CLOUD_API,
        _(
            "Meta's official API: a number registered in WhatsApp Manager. Needs the phone "
            "number ID and an access token from Meta; the only kind with message templates."
        ),
    ),
    (
        Channel.Kind.EVOLUTION,
        _(
            "A phone linked as a device (like WhatsApp Web) through an Evolution API server "
            "you run."
        ),
    ),
    (
        Channel.Kind.WAHA,
        _("A phone linked as a device through a WAHA server you run."),
    ),
    (
        Channel.Kind.BRIDGE,
        _(
            "A phone linked through a bridge that speaks this inbox's own protocol "
            "(docs/bridges.md)."
        ),
    ),
    (
        Channel.Kind.SANDBOX,
        _("A test chat in the browser: try the assistant on your price list before going live."),
    ),
)
# The transport fields a new channel cannot do without (the command line's rule).
REQUIRED: dict[str, tuple[str, ...]] = {
    Channel.Kind.CLOUD_API: ("phone_number_id", "access_token"),
    Channel.Kind.BRIDGE: ("bridge_url", "bridge_token"),
    Channel.Kind.EVOLUTION: ("bridge_url", "bridge_token", "gateway_instance"),
    Channel.Kind.WAHA: ("bridge_url", "bridge_token", "gateway_instance"),
    Channel.Kind.SANDBOX: (),
}


class NewChannelForm(ChannelSettingsForm):
    """The name, the customers' language and the kind's transport fields; timing and working
    hours keep their defaults and are set on the channel's page afterwards."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kind = self.instance.kind
        kept = {"name", "language", *TRANSPORT_FIELDS.get(kind, ())}
        for name in list(self.fields):
            if name not in kept:
                del self.fields[name]
        for name in REQUIRED.get(kind, ()):
            self.fields[name].required = True
        self.fields["name"].required = False
        self.fields["name"].help_text = _(
            "What managers see, e.g. “Shop, main number”; empty = the number or the kind."
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if not cleaned.get("name"):
            shown = cleaned.get("display_phone_number") or self.instance.get_kind_display()
            cleaned["name"] = str(shown)
        return cleaned


def _kind(raw: str) -> str | None:
    return raw if raw in dict(KIND_CHOICES) else None


@login_required
@require_http_methods(["GET", "POST"])
def add_channel(request: HttpRequest) -> HttpResponse:
    """`?business=` (one of the admin's, else the first) and `?kind=`: without a kind, the
    choice of kinds; with one, its form. A kind that is not offered is a 404."""
    page = administered_business(request)
    raw_kind = request.GET.get("kind", "")
    kind = _kind(raw_kind)
    if raw_kind and kind is None:
        raise Http404("no such kind of channel")
    context: dict[str, Any] = {"business": page.business, "businesses": page.businesses}
    if kind is None:
        context["kinds"] = [
            (value, Channel.Kind(value).label, text) for value, text in KIND_CHOICES
        ]
        return render(request, "inbox/settings/channel_add.html", context)
    channel = Channel(business=page.business, kind=kind)
    form = NewChannelForm(request.POST if request.method == "POST" else None, instance=channel)
    if request.method == "POST" and form.is_valid():
        created = form.save()
        messages.success(
            request,
            gettext("Added %(name)s. Now point the provider to the inbox.")
            % {"name": created.name},
        )
        return redirect("settings_channel", channel_id=created.pk)
    context.update(form=form, kind=kind, kind_label=Channel.Kind(kind).label)
    return render(request, "inbox/settings/channel_add.html", context)


@dataclass(frozen=True)
class ConnectBox:
    """Where the provider sends a channel's events, to copy into its settings."""

    webhook_url: str
    verify_token: str  # Cloud API only; empty when the operator has not set one
    fields: str  # what to subscribe to


def connect_box(channel: Channel) -> ConnectBox | None:
    """The Cloud API and bridge channels' box (the gateways have their own, gateway_setup)."""
    base = settings.PUBLIC_BASE_URL
    if channel.kind == Channel.Kind.CLOUD_API:
        return ConnectBox(
            f"{base}/webhooks/whatsapp/",
            settings.WHATSAPP_VERIFY_TOKEN,
            "messages, message_template_status_update",
        )
    if channel.kind == Channel.Kind.BRIDGE:
        return ConnectBox(f"{base}/webhooks/bridge/{channel.pk}/", "", "")
    return None
