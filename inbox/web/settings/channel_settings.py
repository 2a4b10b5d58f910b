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
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import forms
from django.core.validators import MinValueValidator
from django.utils import timezone
from django.utils.timesince import timesince

from inbox.conversations.models import Channel
from inbox.web.admin import ChannelAdminForm

DAYS = [
    ("mon", "Monday"),
    ("tue", "Tuesday"),
    ("wed", "Wednesday"),
    ("thu", "Thursday"),
    ("fri", "Friday"),
    ("sat", "Saturday"),
    ("sun", "Sunday"),
]


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
_GATEWAY_WORDS: dict[str, dict[str, tuple[str, str]]] = {
    Channel.Kind.EVOLUTION: {
        "bridge_url": (
            "Gateway URL",
            "Evolution API's base URL as the inbox reaches it, e.g. http://evolution:8080.",
        ),
        "bridge_token": (
            "Instance token",
            'The instance\'s token (the "hash" instance/create answered); Evolution sends it '
            "back in every webhook.",
        ),
        "gateway_instance": ("Instance", "The instance's name in Evolution API, e.g. shop."),
    },
    Channel.Kind.WAHA: {
        "bridge_url": (
            "Gateway URL",
            "WAHA's base URL as the inbox reaches it, e.g. http://waha:3000.",
        ),
        "bridge_token": (
            "API key",
            "WAHA's API key (X-Api-Key); WAHA signs its webhooks with the same key.",
        ),
        "gateway_instance": ("Session", "The session's name in WAHA, e.g. default."),
    },
}


class ChannelSettingsForm(ChannelAdminForm):
    class Meta(ChannelAdminForm.Meta):
        fields = [
            name
            for name in ChannelAdminForm.Meta.fields
            if name not in ("business", "kind", "working_hours")
        ]

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
            for index, part in enumerate(("from", "to")):
                self.fields[f"wh_{day}_{part}"] = forms.TimeField(
                    required=False,
                    label=f"{label} {part}",
                    initial=span[index] if len(span) == 2 else "",
                    widget=forms.TimeInput(format="%H:%M", attrs={"type": "time"}),
                )
        for name in ("debounce_seconds", "idle_release_hours", "late_answer_cutoff_minutes"):
            self.fields[name].validators.append(MinValueValidator(0))
            self.fields[name].widget.attrs["min"] = "0"
        if "approval" in self.fields:  # a new channel's short form has none
            # A form posted without them (an older page, a script) keeps the channel's values.
            self.fields["approval"].required = False
            self.fields["approval_timeout_minutes"].required = False
            self.fields["approval_timeout_minutes"].validators.append(MinValueValidator(1))
            self.fields["approval_timeout_minutes"].widget.attrs["min"] = "1"
        self.fields["voice_confidence_threshold"].widget.attrs.update(
            {"min": "0", "max": "1", "step": "0.05"}
        )

    def transport_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in TRANSPORT_FIELDS.get(self.instance.kind, ())]

    def courtesy_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in COURTESY_FIELDS.get(self.instance.kind, ())]

    def day_fields(self) -> list[tuple[str, forms.BoundField, forms.BoundField]]:
        return [(label, self[f"wh_{day}_from"], self[f"wh_{day}_to"]) for day, label in DAYS]

    def clean_voice_confidence_threshold(self) -> float:
        value = float(self.cleaned_data["voice_confidence_threshold"])
        if not 0 <= value <= 1:
            raise forms.ValidationError("Between 0 and 1 (e.g. 0.6).")
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
                self.add_error(f"wh_{day}_from", f"{label}: give both times, the start first.")
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
        return Health("idle", "Switched off")
    if channel.last_event_at is None:
        return Health("idle", "No event received yet")
    ago = timesince(channel.last_event_at, now)
    silent = now - channel.last_event_at > timedelta(minutes=channel.silent_alert_minutes)
    if silent and in_working_hours(channel, now):
        return Health(
            "warn",
            f"Silent for {ago}, longer than its {channel.silent_alert_minutes}-minute window: "
            "is the phone online?",
        )
    return Health("ok", f"Last event {ago} ago")
