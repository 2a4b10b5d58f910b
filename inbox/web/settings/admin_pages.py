"""Settings pages for business admins (role `admin` of a business), not only the Django admin.

Each view limits itself to the businesses the user administers (`inbox.web.administered`): a
manager gets 403, another business's channel, price list or `?business=` is a 404.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assistant.knowledge import price_diff, price_upload, settings_validation
from assistant.knowledge.effective import assistant_settings
from assistant.knowledge.price_import import MAX_FILE_BYTES, ImportRejected, restore_version
from assistant.models import AssistantSettings, PriceList, PriceListVersion
from inbox.conversations import access, progress
from inbox.conversations.models import Business, Channel, HandoffReason, Job
from inbox.web import dashboard
from inbox.web.administered import administered_business, require_business_admin
from inbox.web.params import parse_id
from inbox.web.settings import channel_add, channel_settings, gateway_setup, review_fixes
from inbox.web.settings.model_settings import BusinessModelForm

# What the review page lists: questions the price list could not answer, and blocked replies.
REVIEW_REASONS = (HandoffReason.OUTSIDE_KNOWLEDGE_BASE, HandoffReason.GUARDRAIL)
DIFF_ROWS_SHOWN = 100


@login_required
@require_GET
def channels(request: HttpRequest) -> HttpResponse:
    businesses = require_business_admin(request)
    rows = [
        (channel, channel_settings.health(channel))
        for channel in access.administered_channels(request.user)
        .select_related("business")
        .order_by("business__name", "name")
    ]
    purges = [(business, progress.latest([business.pk], Job.Kind.PURGE)) for business in businesses]
    return render(request, "inbox/settings/channels.html", {"rows": rows, "purges": purges})


def _administered_channel(request: HttpRequest, channel_id: int) -> Channel:
    """One of the channels the user administers; any other id is a 404."""
    require_business_admin(request)
    channel = (
        access.administered_channels(request.user)
        .select_related("business")
        .filter(pk=channel_id)
        .first()
    )
    if channel is None:
        raise Http404("no such channel")
    return channel


@login_required
@require_http_methods(["GET", "POST"])
def channel_edit(request: HttpRequest, channel_id: int) -> HttpResponse:
    channel = _administered_channel(request, channel_id)
    form = channel_settings.ChannelSettingsForm(request.POST or None, instance=channel)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(
            request, gettext("Saved the settings of %(name)s.") % {"name": channel.name}
        )
        return redirect("settings_channels")
    # The box and the test describe what is saved, not what the refused form holds.
    saved = Channel.objects.get(pk=channel.pk) if form.is_bound else channel
    return render(
        request,
        "inbox/settings/channel_edit.html",
        {
            "channel": channel,
            "form": form,
            "health": channel_settings.health(channel),
            "gateway": gateway_setup.setup_for(saved),
            "connect": channel_add.connect_box(saved),
            "can_test": channel.kind in gateway_setup.GATEWAY_KINDS,
            "templates": list(channel.templates.all()),
        },
    )


@login_required
@require_POST
def channel_test_connection(request: HttpRequest, channel_id: int) -> HttpResponse:
    """ "Test connection": the gateway's own status endpoint, with the saved settings. htmx swaps
    the answer into the page; without JavaScript it comes back as a message on the page."""
    channel = _administered_channel(request, channel_id)
    report = gateway_setup.connection_report(channel)
    if getattr(request, "htmx", False):
        return render(
            request, "inbox/settings/_gateway_connection.html", {"report": report, "tested": True}
        )
    if report is None:
        messages.info(request, gettext("This kind of channel has no connection to test."))
    elif report.linked:
        messages.success(request, gettext("Linked: %(text)s") % {"text": report.text})
    else:
        messages.error(request, gettext("Not linked: %(text)s") % {"text": report.text})
    return redirect("settings_channel", channel_id=channel.pk)


@login_required
@require_GET
def review(request: HttpRequest) -> HttpResponse:
    """What to fix (open flags, handoffs outside the price list, rejected or edited drafts),
    by the item the assistant read and by reason, each with its fixes; below, the handoffs
    outside the price list and the replies a guardrail blocked, newest first."""
    require_business_admin(request)
    entries = review_fixes.open_entries(request.user)
    reason = request.GET.get("reason", "")
    reasons = (reason,) if reason in REVIEW_REASONS else REVIEW_REASONS
    page = Paginator(dashboard.review_handoffs(request.user, reasons), 50).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "inbox/settings/review.html",
        {
            "page": page,
            "reason": reason,
            "reasons": REVIEW_REASONS,
            "by_item": review_fixes.by_item(entries),
            "by_reason": review_fixes.by_reason(entries),
            "resolved": review_fixes.resolved_flags(request.user),
        },
    )


# --- price list (on assistant.knowledge.price_upload) and assistant settings
# ---------------------------


class PriceUploadForm(forms.Form):
    """Which list to replace (the business's, or one channel's override) and the file."""

    target = forms.ChoiceField(label=_("List"))
    currency = forms.CharField(
        label=_("Currency"),
        required=False,
        max_length=8,
        help_text=_("Used when the file names no currency."),
    )
    file = forms.FileField(
        label=_("File"), help_text=_("CSV or XLSX with columns such as SKU, name, price.")
    )

    def __init__(self, *args: Any, businesses: list[Business], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices: list[tuple[str, str]] = []
        for business in businesses:
            name = gettext("%(business)s: price list") % {"business": business.name}
            choices.append((_choice(business.pk, None), name))
            for channel in business.channels.order_by("name"):
                name = gettext("%(business)s: override for %(channel)s") % {
                    "business": business.name,
                    "channel": channel.name,
                }
                choices.append((_choice(business.pk, channel.pk), name))
        target = self.fields["target"]
        assert isinstance(target, forms.ChoiceField)
        target.choices = choices

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_FILE_BYTES:
            raise forms.ValidationError(gettext("The file is too large."))
        return upload


def _choice(business_id: int, channel_id: int | None) -> str:
    """The form's name for a list: "b<business id>", or "c<channel id>" for an override."""
    return f"c{channel_id}" if channel_id is not None else f"b{business_id}"


def _target(target: str, businesses: list[Business]) -> tuple[Business, Channel | None]:
    """The business and (for an override) channel a target choice names, among the user's."""
    by_id = {b.pk: b for b in businesses}
    kind, named = target[:1], parse_id(target[1:])
    if kind == "b" and named in by_id:
        return by_id[named], None
    if kind == "c" and named is not None:
        channel = Channel.objects.filter(pk=named, business__in=businesses).first()
        if channel is not None:
            return by_id[channel.business_id], channel
    raise Http404("no such price list")


@login_required
@require_http_methods(["GET", "POST"])
def price_list(request: HttpRequest) -> HttpResponse:
    """Upload → preview with row errors (nothing written) → apply (a new version, all or
    nothing), through assistant.knowledge.price_upload. A worker reads the file: the page
    (`?upload=<token>`) polls until the preview is there."""
    businesses = require_business_admin(request)
    context: dict[str, Any] = {}
    if request.method == "POST" and request.POST.get("token"):
        return _apply_price_list(request, businesses)
    form = PriceUploadForm(request.POST or None, request.FILES or None, businesses=businesses)
    if request.method == "POST" and form.is_valid():
        business, channel = _target(form.cleaned_data["target"], businesses)
        upload = form.cleaned_data["file"]
        token = price_upload.submit(
            upload.read(),
            upload.name,
            form.cleaned_data["currency"],
            business_id=business.pk,
            channel_id=channel.pk if channel else None,
            user=request.user,
        )
        return redirect(f"{request.path}?upload={token}")
    token = request.GET.get("upload", "")
    if token:
        job_id = price_upload.job_of(token, request.user)
        context["job"] = progress.visible(job_id, [b.pk for b in businesses]) if job_id else None
    if token and price_upload.parsing(token, request.user):
        context.update(parsing=True, token=token)
    elif token:
        staged = price_upload.take(token, request.user)
        if staged is None:
            context.update(upload_gone=True)
        else:
            business, channel = _target(_choice(staged.business_id, staged.channel_id), businesses)
            context.update(
                preview=staged.preview,
                rows=staged.preview.rows[:200],
                token=staged.token,
                business=business,
                channel=channel,
                diff=price_diff.diff_against_current(
                    business.pk, channel.pk if channel else None, staged.preview.rows
                ),
                diff_shown=DIFF_ROWS_SHOWN,
            )
    lists = (
        PriceList.objects.filter(business__in=businesses)
        .select_related("business", "channel", "current_version")
        .order_by("business__name", "channel__name")
    )
    history = (
        PriceListVersion.objects.filter(price_list__business__in=businesses)
        .select_related("price_list__channel", "price_list__business", "created_by")
        .order_by("-created_at")[:30]
    )
    current_ids = {item.current_version_id for item in lists}
    context.update(form=form, lists=lists, history=history, current_ids=current_ids)
    return render(request, "inbox/settings/price_list.html", context)


def _apply_price_list(request: HttpRequest, businesses: list[Business]) -> HttpResponse:
    staged = price_upload.take(request.POST.get("token", ""), request.user)
    if staged is None:
        messages.error(request, gettext("The upload expired; choose the file again."))
        return redirect("settings_price_list")
    # The role may have been taken away since the preview: 404 unless the list is still theirs.
    _target(_choice(staged.business_id, staged.channel_id), businesses)
    skip = request.POST.get("skip_bad_rows") == "1"
    try:
        version = price_upload.apply(staged, request.user, skip_bad_rows=skip)
    except ImportRejected as exc:
        messages.error(request, gettext("Nothing was imported: %(why)s") % {"why": exc})
        return redirect("settings_price_list")
    done = {"number": version.number, "items": version.item_count, "bad": version.skipped_rows}
    if version.skipped_rows:
        text = gettext("Applied version %(number)s (items: %(items)s, bad rows skipped: %(bad)s).")
    else:
        text = gettext("Applied version %(number)s (items: %(items)s).")
    messages.success(request, text % done)
    return redirect("settings_price_list")


@login_required
@require_http_methods(["GET", "POST"])
def price_list_restore(request: HttpRequest, version_id: int) -> HttpResponse:
    """Roll a list back to an earlier version: GET shows what the rollback changes against the
    current version and asks to confirm; POST makes a new current version copying it (the
    history keeps every version). Another business's version is a 404."""
    businesses = require_business_admin(request)
    earlier = (
        PriceListVersion.objects.filter(pk=version_id, price_list__business__in=businesses)
        .select_related("price_list__business", "price_list__channel")
        .first()
    )
    if earlier is None:
        raise Http404("no such version")
    if request.method == "GET":
        price_list = earlier.price_list
        diff = price_diff.diff_against_current(
            price_list.business_id, price_list.channel_id, earlier.items.order_by("position")
        )
        return render(
            request,
            "inbox/settings/price_list_restore.html",
            {"earlier": earlier, "diff": diff, "diff_shown": DIFF_ROWS_SHOWN},
        )
    try:
        version = restore_version(earlier, request.user)
    except ImportRejected as exc:
        messages.error(request, gettext("Nothing was restored: %(why)s") % {"why": exc})
        return redirect("settings_price_list")
    messages.success(
        request,
        gettext(
            "Rolled back: version %(number)s is a copy of version %(earlier)s (items: %(items)s)."
        )
        % {"number": version.number, "earlier": earlier.number, "items": version.item_count},
    )
    return redirect("settings_price_list")


class AssistantSettingsForm(forms.ModelForm):  # type: ignore[type-arg]
    """Handoff reasons as "code: description" lines and forbidden promises one per line, so a
    business admin never edits JSON."""

    reasons_text = forms.CharField(
        label=_("Handoff reasons"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 7}),
        help_text=_('One per line: "code: when to hand the chat to a manager".'),
    )
    promises_text = forms.CharField(
        label=_("Forbidden promises"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 5}),
        help_text=_("One phrase per line; a reply containing one is never sent."),
    )

    class Meta:
        model = AssistantSettings
        fields = ["business_rules", "replay_gate", "replay_gate_threshold"]
        widgets = {"business_rules": forms.Textarea(attrs={"rows": 8})}
        labels = {
            "business_rules": _("Tone and business rules"),
            "replay_gate": _("Confirm changes whose replay raises blocks or handoffs"),
            "replay_gate_threshold": _("Replay gate threshold"),
        }
        help_texts = {
            "business_rules": _(
                "Tone and rules in plain words, e.g. delivery terms, opening hours, "
                "'address customers formally'. The model may quote facts written here."
            ),
            "replay_gate": _(
                "A change whose replay raises guardrail blocks or handoffs by more than the "
                "threshold needs an explicit confirmation before it is applied."
            ),
            "replay_gate_threshold": _(
                "The most the share of guardrail blocks, or of handoffs, may rise "
                "(0.05 = 5 percentage points)."
            ),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reasons_text"].initial = "\n".join(
            f"{r['code']}: {r['description']}" for r in self.instance.reasons()
        )
        self.fields["promises_text"].initial = "\n".join(self.instance.promises())
        if "replay_gate_threshold" in self.fields:
            self.fields["replay_gate_threshold"].required = False

    def clean_replay_gate_threshold(self) -> float:
        value = self.cleaned_data.get("replay_gate_threshold")
        if value is None:
            return float(self.instance.replay_gate_threshold)
        if not 0 <= value <= 1:
            raise forms.ValidationError(gettext("A share between 0 and 1, e.g. 0.05 for 5 points."))
        return float(value)

    def clean_reasons_text(self) -> list[dict[str, str]]:
        reasons, problems = settings_validation.parse_handoff_reasons(
            self.cleaned_data["reasons_text"]
        )
        if problems:
            raise forms.ValidationError(problems)
        return reasons

    def clean_promises_text(self) -> list[str]:
        phrases, problems = settings_validation.parse_forbidden_promises(
            self.cleaned_data["promises_text"]
        )
        if problems:
            raise forms.ValidationError(problems)
        return phrases

    def clean(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = super().clean() or {}
        # Against the phrases typed, even when another line of them is refused: every
        # problem is shown at once.
        phrases, _ = settings_validation.parse_forbidden_promises(
            str(self.data.get("promises_text", ""))
        )
        if "business_rules" in cleaned:
            problems = settings_validation.check_business_rules(cleaned["business_rules"], phrases)
            for problem in problems:
                self.add_error("business_rules", problem)
        return cleaned

    def save(self, commit: bool = True) -> AssistantSettings:
        settings_row: AssistantSettings = super().save(commit=False)
        settings_row.handoff_reasons = self.cleaned_data["reasons_text"]
        settings_row.forbidden_promises = self.cleaned_data["promises_text"]
        if commit:
            settings_row.save()
        return settings_row


@login_required
@require_http_methods(["GET", "POST"])
def assistant_settings_page(request: HttpRequest) -> HttpResponse:
    page = administered_business(request)
    business = page.business
    current = assistant_settings(business.pk)
    form = AssistantSettingsForm(request.POST or None, instance=current)
    model_form = BusinessModelForm(request.POST or None, instance=current, prefix="model")
    asked = request.GET.get("rule", "").strip()[:500]
    if asked and request.method == "GET":
        # From the reports' "outside the knowledge base" list: the question, ready for its answer.
        rules = current.business_rules.rstrip()
        form.initial["business_rules"] = f"{rules}\n\nQ: {asked}\nA: ".lstrip()
    if request.method == "POST" and all([form.is_valid(), model_form.is_valid()]):
        form.save()  # both forms edit the same row (`current`)
        model_form.save()
        messages.success(
            request,
            gettext("Saved the assistant settings of %(business)s.") % {"business": business.name},
        )
        return redirect(f"{request.path}?business={business.pk}")
    return render(
        request,
        "inbox/settings/assistant.html",
        {
            "form": form,
            "model_form": model_form,
            "business": business,
            "businesses": page.businesses,
        },
    )
