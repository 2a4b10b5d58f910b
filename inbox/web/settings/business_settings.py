"""A business admin sets the business's time zone, language, opt-out words and follow-up
ladder (not only in the Django admin).

The time zone is what working hours, the silent-number alert, the reports and every time a
manager sees are read in; the language is the assistant's where a channel names none; and
whether a resolved chat goes back to the bot or waits for a human (`inbox.conversations.lifecycle`);
the follow-ups after an unanswered quote are `inbox.upkeep.followups`'s.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import available_timezones

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods

from assistant.language import SUPPORTED
from inbox.conversations import opt_outs
from inbox.conversations.models import Business
from inbox.upkeep import followups
from inbox.web import local_language
from inbox.web.administered import administered_business


class BusinessSettingsForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Business
        fields = [
            "timezone",
            "language",
            "ui_language",
            "resolve_returns_to",
            "opt_out_keywords",
            "followup_steps",
            "followup_texts",
        ]
        # The model's words, marked here so the page reads in the admin's language.
        labels = {
            "timezone": _("Timezone"),
            "language": _("Language"),
            "ui_language": _("Inbox language"),
            "resolve_returns_to": _("A resolved chat goes back to"),
            "opt_out_keywords": _("Opt-out words"),
            "followup_steps": _("Follow-up after (hours)"),
            "followup_texts": _("Follow-up texts"),
        }
        help_texts = {
            "timezone": _(
                "IANA name (e.g. Europe/Moscow): working hours, reports, the silent-number "
                "alert and every time a manager sees are in this time zone."
            ),
            "language": _("The assistant's language where a channel names none (e.g. en, ru)."),
            "ui_language": _(
                "The language of the inbox for members who have not chosen their own."
            ),
            "resolve_returns_to": _(
                "When a manager resolves a chat, their hold on it ends: who has it when the "
                "customer writes again."
            ),
            "opt_out_keywords": _(
                'Messages that mean "stop writing to me", one per line (any case); '
                "empty = the built-in English, Russian and Kazakh list."
            ),
        }
        widgets = {
            "opt_out_keywords": forms.Textarea(attrs={"rows": 4}),
            "followup_texts": forms.Textarea(attrs={"rows": 3}),
        }

    def clean_timezone(self) -> str:
        name = str(self.cleaned_data["timezone"]).strip()
        if name not in available_timezones():
            raise forms.ValidationError(_("An IANA time zone name, e.g. Europe/Moscow or UTC."))
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
            raise forms.ValidationError(
                gettext("One of: %(codes)s.") % {"codes": ", ".join(sorted(SUPPORTED))}
            )
        return code

    def clean_opt_out_keywords(self) -> str:
        lines = [
            " ".join(line.split())
            for line in str(self.cleaned_data["opt_out_keywords"]).splitlines()
        ]
        kept = [line[:100] for line in lines if line]
        if len(kept) > 100:
            raise forms.ValidationError(_("At most 100 words or phrases, one per line."))
        return "\n".join(kept)

    def clean_followup_steps(self) -> str:
        value = str(self.cleaned_data["followup_steps"]).strip()
        try:
            hours = followups.parse_steps(value)
        except ValueError as exc:
            message = str(exc) if "step" in str(exc).lower() else "Hours, e.g. 2, 24."
            raise forms.ValidationError(message) from exc
        return ", ".join(f"{h:g}" for h in hours)

    def clean_followup_texts(self) -> str:
        lines = [
            " ".join(line.split())[:1000]
            for line in str(self.cleaned_data["followup_texts"]).splitlines()
        ]
        kept = [line for line in lines if line]
        if len(kept) > followups.MAX_STEPS:
            raise forms.ValidationError(f"At most {followups.MAX_STEPS} lines, one per step.")
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
        with translation.override(local_language.language_of(request.user)):
            saved = gettext("Saved the settings of %(name)s.") % {"name": business.name}
        messages.success(request, saved)
        return redirect(f"{request.path}?business={business.pk}")
    return render(
        request,
        "inbox/settings/business.html",
        {
            "form": form,
            "business": business,
            "businesses": page.businesses,
            "default_opt_out_words": opt_outs.DEFAULT_KEYWORDS,
            "default_followup_texts": followups.DEFAULT_TEXTS,
        },
    )
