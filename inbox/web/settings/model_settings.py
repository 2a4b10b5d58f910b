"""A business's own model endpoint as its admin edits it on the Assistant settings page.

Blank base URL: the installation's model (LLM_BASE_URL). The URL must pass the egress allow-list
(`inbox.platform.egress`) to be saved; the API key is write-only (the page says whether one
is set, never any of it; empty keeps it; "Remove" clears it). `assistant.llm.business` uses it.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.validators import URLValidator
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from assistant.models import AssistantSettings
from inbox.platform import egress
from inbox.web.forms import WriteOnlySecrets, secret_field


class BusinessModelForm(WriteOnlySecrets):
    secret_fields = ("model_api_key",)

    model_api_key = secret_field()
    model_api_key.label = _("API key")
    model_api_key_clear = forms.BooleanField(required=False, label=_("Remove the stored API key"))

    class Meta:
        model = AssistantSettings
        fields = ["model_base_url", "model_name", "model_structured_output", "model_api_key"]
        labels = {
            "model_base_url": _("Own model endpoint: base URL"),
            "model_name": _("Model name"),
            "model_structured_output": _("Structured output"),
        }
        help_texts = {
            "model_base_url": _(
                "An OpenAI-compatible base URL, e.g. https://llm.example.com/v1. Empty: the "
                "installation's model."
            ),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["model_structured_output"].required = False  # a form without it: the default

    def clean_model_structured_output(self) -> str:
        return str(self.cleaned_data.get("model_structured_output") or "json_schema")

    def secret_state(self, name: str, stored: str) -> str:
        return gettext("Set.")  # not even its last characters

    def clean_model_base_url(self) -> str:
        url = str(self.cleaned_data.get("model_base_url") or "").strip()
        if not url:
            return ""
        URLValidator(schemes=["http", "https"])(url)
        try:
            egress.check(url)
        except egress.EgressRefused as exc:
            raise forms.ValidationError(str(exc)) from exc
        return url

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("model_api_key_clear"):
            cleaned["model_api_key"] = ""
        return cleaned
