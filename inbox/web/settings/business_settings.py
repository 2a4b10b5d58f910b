"""A business admin sets the business's time zone, language and opt-out words (not only in the
Django admin).

The time zone is what working hours, the silent-number alert, the reports and every time a
manager sees are read in; the language is the assistant's where a channel names none; and
whether a resolved chat goes back to the bot or waits for a human (`inbox.conversations.lifecycle`).
"""

from __future__ import annotations

from typing import Any
from zoneinfo import available_timezones

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from assistant.language import SUPPORTED
from inbox.conversations import opt_outs
from inbox.conversations.models import Business
from inbox.web import local_language
from inbox.web.administered import administered_business


class BusinessSettingsForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Business
        fields = ["timezone", "language", "ui_language", "resolve_returns_to", "opt_out_keywords"]
        labels = {"opt_out_keywords": "Opt-out words"}
        widgets = {"opt_out_keywords": forms.Textarea(attrs={"rows": 4})}

    def clean_timezone(self) -> str:
        name = str(self.cleaned_data["timezone"]).strip()
        if name not in available_timezones():
            raise forms.ValidationError("An IANA time zone name, e.g. Europe/Moscow or UTC.")
        return name

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A form posted without it (an older page, the API of a script) keeps the language.
        self.fields["ui_language"].required = False

    def clean_ui_language(self) -> str:
        return str(self.cleaned_data.get("ui_language") or self.instance.ui_language)

    def clean_language(self) -> str:
        code = str(self.cleaned_data["language"]).strip().lower()
        if code and code not in SUPPORTED:
            raise forms.ValidationError(f"One of: {', '.join(sorted(SUPPORTED))}.")
        return code

    def clean_opt_out_keywords(self) -> str:
        lines = [
            " ".join(line.split())
            for line in str(self.cleaned_data["opt_out_keywords"]).splitlines()
        ]
        kept = [line[:100] for line in lines if line]
        if len(kept) > 100:
            raise forms.ValidationError("At most 100 words or phrases, one per line.")
        return "\n".join(kept)


@login_required
@require_http_methods(["GET", "POST"])
def business_settings(request: HttpRequest) -> HttpResponse:
    page = administered_business(request)
    business = page.business
    form = BusinessSettingsForm(request.POST or None, instance=business)
    if request.method == "POST" and form.is_valid():
        form.save()
        local_language.forget(business.pk)
        messages.success(request, f"Saved the settings of {business.name}.")
        return redirect(f"{request.path}?business={business.pk}")
    return render(
        request,
        "inbox/settings/business.html",
        {
            "form": form,
            "business": business,
            "businesses": page.businesses,
            "default_opt_out_words": opt_outs.DEFAULT_KEYWORDS,
        },
    )
