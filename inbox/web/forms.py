"""Form pieces shared by the admin and the business-admin pages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.utils.translation import gettext

from inbox.platform.fields import mask_secret

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


def secret_field(
    help_text: StrOrPromise = "", label: StrOrPromise | None = None
) -> forms.CharField:
    """An input for a credential: typed in, never rendered back."""
    return forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        strip=True,
        label=label,
        help_text=help_text,
    )


def _in_sentence(label: object) -> str:
    """A field label inside a sentence: its first letter lowered, unless it starts an acronym
    ("Application key" → "application key", "URL of…" stays)."""
    text = str(label)
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


class WriteOnlySecrets(forms.ModelForm):  # type: ignore[type-arg]
    """Credentials in `secret_fields` are write-only: the form says whether one is set (never
    its value), and leaving the input empty keeps what is stored."""

    secret_fields: tuple[str, ...] = ()
    # When True, each stored secret gets a "clear" checkbox (`clear_<name>`) right after it:
    # the only way to remove one, since an empty input keeps it.
    clearable_secrets = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.clearable_secrets:
            self._add_clear_boxes()
        for name in self.secret_fields:
            stored = getattr(self.instance, name, "") if self.instance.pk else ""
            state = (
                f"{self.secret_state(name, stored)} {gettext('Leave empty to keep it.')}"
                if stored
                else gettext("Not set.")
            )
            base = self.fields[name].help_text
            self.fields[name].help_text = f"{base} {state}" if base else state

    def secret_state(self, name: str, stored: str) -> str:
        """How a stored secret is described (a subclass may name something safer to show)."""
        return gettext("Set (%(masked)s).") % {"masked": mask_secret(stored)}

    def _add_clear_boxes(self) -> None:
        order: list[str] = []
        for name in list(self.fields):
            order.append(name)
            stored = getattr(self.instance, name, "") if self.instance.pk else ""
            if name in self.secret_fields and stored:
                label = self.fields[name].label or name.replace("_", " ")
                self.fields[f"clear_{name}"] = forms.BooleanField(
                    required=False,
                    label=gettext("Clear the stored %(name)s") % {"name": _in_sentence(label)},
                )
                order.append(f"clear_{name}")
        self.order_fields(order)

    @property
    def cleared_secrets(self) -> list[str]:
        """Secrets the admin chose to clear (empty when the form is not valid)."""
        data = getattr(self, "cleaned_data", {})
        return [name for name in self.secret_fields if data.get(f"clear_{name}")]

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        for name in self.secret_fields:
            if cleaned.get(f"clear_{name}"):
                if cleaned.get(name):
                    self.add_error(
                        name, gettext("Type a new value or clear the stored one, not both.")
                    )
                cleaned[name] = ""
            elif not cleaned.get(name) and self.instance.pk:
                cleaned[name] = getattr(self.instance, name)
        return cleaned
