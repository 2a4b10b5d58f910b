"""A channel's settings as its business admin edits them, and its health line.

The form reuses the Django admin's `ChannelAdminForm` (credentials write-only: the page shows
whether a secret is set, never its value; an empty input keeps it) without the fields an admin
must not change from the inbox (which business owns the channel, its transport kind), with
only the transport fields of the channel's kind (the others keep their stored values), and with
working hours as a from/to pair per weekday instead of raw JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import forms
from django.core.validators import MinValueValidator
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from inbox.conversations.models import Channel
from inbox.web.admin import ChannelAdminForm
from inbox.web.elapsed import elapsed
from inbox.web.forms import secret_field

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

DAYS: list[tuple[str, StrOrPromise]] = [
    ("mon", _("Monday")),
    ("tue", _("Tuesday")),
    ("wed", _("Wednesday")),
    ("thu", _("Thursday")),
    ("fri", _("Friday")),
    ("sat", _("Saturday")),
    ("sun", _("Sunday")),
]


# Django's own words, marked here too: Django's Kazakh catalogue lacks them (ours fills in).
AT_LEAST = _("Ensure this value is greater than or equal to %(limit_value)s.")

# The transport fields each kind's page shows, in order.
TRANSPORT_FIELDS: dict[str, tuple[str, ...]] = {
    Channel.Kind.CLOUD_API: ("phone_number_id", "display_phone_number", "access_token", "waba_id"),
    Channel.Kind.BRIDGE: ("bridge_url", "bridge_token"),
    Channel.Kind.EVOLUTION: ("bridge_url", "bridge_token", "gateway_instance"),
    Channel.Kind.WAHA: ("bridge_url", "bridge_token", "gateway_instance"),
    Channel.Kind.SANDBOX: (),
}
_EVERY_TRANSPORT_FIELD = {name for names in TRANSPORT_FIELDS.values() for name in names}
# What the customer sees while the assistant composes, for the kinds whose provider shows it.
COURTESY_FIELDS: dict[str, tuple[str, ...]] = {
    Channel.Kind.CLOUD_API: ("read_receipts", "typing_indicator"),
    Channel.Kind.WAHA: ("read_receipts", "typing_indicator"),
}
_EVERY_COURTESY_FIELD = {name for names in COURTESY_FIELDS.values() for name in names}

# A linked-device gateway's fields in its own words: (label, help text).
_GATEWAY_WORDS: dict[str, dict[str, tuple[StrOrPromise, StrOrPromise]]] = {
    Channel.Kind.EVOLUTION: {
        "bridge_url": (
            _("Gateway URL"),
            _("Evolution API's base URL as the inbox reaches it, e.g. http://evolution:8080."),
        ),
        "bridge_token": (
            _("Instance token"),
            _(
                'The instance\'s token (the "hash" instance/create answered); Evolution sends it '
                "back in every webhook."
            ),
        ),
        "gateway_instance": (_("Instance"), _("The instance's name in Evolution API, e.g. shop.")),
    },
    Channel.Kind.WAHA: {
        "bridge_url": (
            _("Gateway URL"),
            _("WAHA's base URL as the inbox reaches it, e.g. http://waha:3000."),
        ),
        "bridge_token": (
            _("API key"),
            _("WAHA's API key (X-Api-Key); WAHA signs its webhooks with the same key."),
        ),
        "gateway_instance": (_("Session"), _("The session's name in WAHA, e.g. default.")),
    },
}


class ChannelSettingsForm(ChannelAdminForm):
    """The channel page's form, every label and help text in the admin's language (the model's
    own words, marked here)."""

    access_token = secret_field(_("Cloud API access token."), label=_("Access token"))
    bridge_token = secret_field(
        _(
            "The bridge's bearer token; for Evolution API the instance token, for WAHA the API "
            "key (also the key of its webhook signatures)."
        ),
        label=_("Bridge token"),
    )
    bridge_url = forms.URLField(
        required=False,
        assume_scheme="https",
        label=_("Bridge URL"),
        help_text=_("Base URL of the bridge, Evolution API or WAHA, as the inbox reaches it."),
    )

    class Meta(ChannelAdminForm.Meta):
        fields = [
            name
            for name in ChannelAdminForm.Meta.fields
            if name not in ("business", "kind", "working_hours")
        ]
        labels = {
            "name": _("Channel name"),
            "is_active": _("Active"),
            "language": _("Language"),
            "phone_number_id": _("Phone number ID"),
            "display_phone_number": _("Display phone number"),
            "waba_id": _("WABA ID"),
            "gateway_instance": _("Gateway instance"),
            "debounce_seconds": _("Debounce, seconds"),
            "idle_release_hours": _("Idle release, hours"),
            "late_answer_cutoff_minutes": _("Late answer cutoff, minutes"),
            "voice_confidence_threshold": _("Voice confidence threshold"),
            "silent_alert_minutes": _("Silent alert, minutes"),
            "read_receipts": _("Read receipts"),
            "typing_indicator": _("Typing indicator"),
            "approval": _("Approval"),
            "approval_timeout_minutes": _("Approval timeout, minutes"),
        }
        help_texts = {
            "phone_number_id": _("Cloud API phone number ID (from Meta)."),
            "waba_id": _(
                "WhatsApp Business Account ID (from Meta): its message templates are synced."
            ),
            "gateway_instance": _("Evolution API instance or WAHA session name."),
            "language": _("Language of most customers (e.g. en, ru); blank = detect."),
            "debounce_seconds": _(
                "Wait this long after a customer's last message before answering."
            ),
            "idle_release_hours": _(
                "Give a chat back to the bot after this long without a manager message."
            ),
            "late_answer_cutoff_minutes": _(
                "Older customer messages go to a human instead of the bot."
            ),
            "voice_confidence_threshold": _(
                "Below this transcript confidence the assistant asks to clarify."
            ),
            "silent_alert_minutes": _(
                "Alert when no event arrives for this long during working hours."
            ),
            "read_receipts": _(
                "Mark the customer's messages read when the assistant starts answering "
                "(Cloud API and WAHA numbers)."
            ),
            "typing_indicator": _(
                'Show "typing…" while the assistant composes a reply; WhatsApp shows it '
                "only together with the read mark, so it needs read receipts on."
            ),
            "approval": _("Bot replies that wait for a manager's approval before they go out."),
            "approval_timeout_minutes": _(
                "A draft not approved within this many minutes (of working hours, when set) "
                "hands the chat to a person and tells the customer so."
            ),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        kind = self.instance.kind
        shown = TRANSPORT_FIELDS.get(kind, ())
        for name in _EVERY_TRANSPORT_FIELD - set(shown):
            del self.fields[name]
        for name in _EVERY_COURTESY_FIELD - set(COURTESY_FIELDS.get(kind, ())):
            del self.fields[name]
        for name, (label, help_text) in _GATEWAY_WORDS.get(kind, {}).items():
            field = self.fields[name]
            field.label = label
            # A write-only secret's help already says whether it is set: keep that part.
            state = field.help_text.removeprefix(str(self.base_fields[name].help_text)).strip()
            field.help_text = f"{help_text} {state}".strip()
            # A stored key may stay as it is (an empty input keeps it); a missing one is needed.
            field.required = name != "bridge_token" or not self.instance.bridge_token
        if kind == Channel.Kind.WAHA and not self.instance.gateway_instance:
            self.initial["gateway_instance"] = "default"  # WAHA's own default session
        hours = self.instance.working_hours if isinstance(self.instance.working_hours, dict) else {}
        for day, label in DAYS:
            span = hours.get(day) or ["", ""]
            for index, (part, words) in enumerate(
                (("from", gettext("%(day)s from")), ("to", gettext("%(day)s to")))
            ):
                self.fields[f"wh_{day}_{part}"] = forms.TimeField(
                    required=False,
                    label=words % {"day": label},
                    initial=span[index] if len(span) == 2 else "",
                    widget=forms.TimeInput(format="%H:%M", attrs={"type": "time"}),
                )
        for name in ("debounce_seconds", "idle_release_hours", "late_answer_cutoff_minutes"):
            self.fields[name].validators.append(MinValueValidator(0, AT_LEAST))
            self.fields[name].widget.attrs["min"] = "0"
        if "approval" in self.fields:  # a new channel's short form has none
            # A form posted without them (an older page, a script) keeps the channel's values.
            self.fields["approval"].required = False
            self.fields["approval_timeout_minutes"].required = False
            self.fields["approval_timeout_minutes"].validators.append(
                MinValueValidator(1, AT_LEAST)
            )
            self.fields["approval_timeout_minutes"].widget.attrs["min"] = "1"
        self.fields["voice_confidence_threshold"].widget.attrs.update(
            {"min": "0", "max": "1", "step": "0.05"}
        )

    def transport_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in TRANSPORT_FIELDS.get(self.instance.kind, ())]

    def courtesy_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in COURTESY_FIELDS.get(self.instance.kind, ())]

    def day_fields(self) -> list[tuple[StrOrPromise, forms.BoundField, forms.BoundField]]:
        return [(label, self[f"wh_{day}_from"], self[f"wh_{day}_to"]) for day, label in DAYS]

    def clean_voice_confidence_threshold(self) -> float:
        value = float(self.cleaned_data["voice_confidence_threshold"])
        if not 0 <= value <= 1:
            raise forms.ValidationError(gettext("Between 0 and 1 (e.g. 0.6)."))
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        hours: dict[str, list[str]] = {}
        for day, label in DAYS:
            start: time | None = cleaned.get(f"wh_{day}_from")
            end: time | None = cleaned.get(f"wh_{day}_to")
            if start is None and end is None:
                continue
            if start is None or end is None or start >= end:
                self.add_error(
                    f"wh_{day}_from",
                    gettext("%(day)s: give both times, the start first.") % {"day": label},
                )
                continue
            hours[day] = [start.strftime("%H:%M"), end.strftime("%H:%M")]
        cleaned["working_hours"] = hours
        if "approval" in self.fields and not cleaned.get("approval"):
            cleaned["approval"] = self.instance.approval
        timeout = "approval_timeout_minutes"
        if timeout in self.fields and cleaned.get(timeout) is None:
            cleaned[timeout] = self.instance.approval_timeout_minutes
        return cleaned

    def save(self, commit: bool = True) -> Channel:
        channel: Channel = super().save(commit=False)
        channel.working_hours = self.cleaned_data["working_hours"]
        if commit:
            channel.save()
        return channel


def in_working_hours(channel: Channel, now: datetime) -> bool:
    """Empty working hours mean always on; a weekday without hours is closed."""
    hours = channel.working_hours if isinstance(channel.working_hours, dict) else {}
    if not hours:
        return True
    try:
        zone = ZoneInfo(channel.business.timezone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    local = now.astimezone(zone)
    span = hours.get(DAYS[local.weekday()][0])
    if not isinstance(span, list) or len(span) != 2:
        return False
    return str(span[0]) <= local.strftime("%H:%M") < str(span[1])


@dataclass(frozen=True)
class Health:
    level: str  # ok | warn | idle
    text: str


def health(channel: Channel, now: datetime | None = None) -> Health:
    """One line per channel: when it last heard anything, and whether that is too long ago."""
    now = now or timezone.now()
    if not channel.is_active:
        return Health("idle", gettext("Switched off"))
    if channel.last_event_at is None:
        return Health("idle", gettext("No event received yet"))
    ago = elapsed(channel.last_event_at, now)
    silent = now - channel.last_event_at > timedelta(minutes=channel.silent_alert_minutes)
    if silent and in_working_hours(channel, now):
        return Health(
            "warn",
            gettext(
                "Silent for %(ago)s, longer than its %(minutes)s-minute window: "
                "is the phone online?"
            )
            % {"ago": ago, "minutes": channel.silent_alert_minutes},
        )
    return Health("ok", gettext("Last event %(ago)s ago") % {"ago": ago})
