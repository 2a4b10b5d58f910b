"""Form pieces shared by the admin and the business-admin pages."""

from __future__ import annotations

from typing import Any

from django import forms

from inbox.conversations.fields import mask_secret


def secret_field(help_text: str = "") -> forms.CharField:
    """An input for a credential: typed in, never rendered back."""
    return forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        strip=True,
        help_text=help_text,
    )


class WriteOnlySecrets(forms.ModelForm):  # type: ignore[type-arg]
    """Credentials in `secret_fields` are write-only: the form says whether one is set (never
    its value), and leaving the input empty keeps what is stored."""

    secret_fields: tuple[str, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in self.secret_fields:
            stored = getattr(self.instance, name, "") if self.instance.pk else ""
            state = (
                f"{self.secret_state(name, stored)} Leave empty to keep it."
                if stored
                else "Not set."
            )
            base = self.fields[name].help_text
            self.fields[name].help_text = f"{base} {state}" if base else state

    def secret_state(self, name: str, stored: str) -> str:
        """How a stored secret is described (a subclass may name something safer to show)."""
        return f"Set ({mask_secret(stored)})."

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        for name in self.secret_fields:
            if not cleaned.get(name) and self.instance.pk:
                cleaned[name] = getattr(self.instance, name)
        return cleaned
