"""Replay pages for business admins: start a replay, watch it, read the report, apply or discard.

Every view limits itself to the businesses the user administers: a manager gets 403, another
business's replay is a 404. The work is `assistant.replay.engine`; these only parse and render.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from assistant.knowledge import price_upload
from assistant.knowledge.effective import assistant_settings
from assistant.models import ReplayRun, ReplayTurn
from assistant.replay import engine
from assistant.replay.candidate import Candidate, CandidateModel
from inbox.conversations.models import Business, HandoffReason
from inbox.platform import egress
from inbox.platform.logs import mask_phone_numbers
from inbox.web.administered import administered_business, require_business_admin
from inbox.web.params import id_param, parse_id
from inbox.web.settings import review_fixes
from inbox.web.settings.admin_pages import AssistantSettingsForm
from inbox.web.why import action_label


class CandidateRulesForm(AssistantSettingsForm):
    """The assistant settings form without the gate: a replay tries rules, not its own gate."""

    class Meta(AssistantSettingsForm.Meta):
        fields = ["business_rules"]


class ReplayForm(forms.Form):
    """Which past turns, and what to try: the staged price list, edited rules, another model."""

    business = forms.ChoiceField(label=_("Business"))
    days = forms.IntegerField(min_value=1, max_value=365, initial=7, label=_("Last N days"))
    channel = forms.ChoiceField(required=False, label=_("Channel"))
    reason = forms.CharField(required=False, max_length=64, label=_("Only handoffs with reason"))
    chat_ids = forms.CharField(
        required=False,
        label=_("Saved set: chat ids"),
        help_text=_("Comma-separated; empty: all chats."),
    )
    limit = forms.IntegerField(
        min_value=1, max_value=engine.MAX_TURNS, initial=200, label=_("Limit")
    )
    upload = forms.CharField(required=False, widget=forms.HiddenInput)
    change_rules = forms.BooleanField(required=False, label=_("Try edited rules"))
    model_base_url = forms.URLField(
        required=False, assume_scheme="https", label=_("Try another model: base URL")
    )
    model_name = forms.CharField(required=False, max_length=200, label=_("Model name"))
    model_structured_output = forms.ChoiceField(
        choices=[("json_schema", "json_schema (vLLM)"), ("json_object", "json_object")],
        required=False,
        label=_("Model structured output"),
    )
    model_api_key = forms.CharField(
        required=False, widget=forms.PasswordInput(render_value=False), label=_("API key")
    )

    def __init__(self, *args: Any, businesses: list[Business], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.businesses = {b.pk: b for b in businesses}
        self.fields["business"].choices = [(b.pk, b.name) for b in businesses]  # type: ignore[attr-defined]
        channels = [("", gettext("All channels"))] + [
            (c.pk, f"{b.name}: {c.name}") for b in businesses for c in b.channels.order_by("name")
        ]
        self.fields["channel"].choices = channels  # type: ignore[attr-defined]

    def clean_chat_ids(self) -> tuple[int, ...]:
        raw = self.cleaned_data["chat_ids"].replace(" ", "")
        ids = [parse_id(p) for p in raw.split(",") if p]
        if None in ids:
            raise forms.ValidationError(gettext("Chat ids are numbers, separated by commas."))
        return tuple(i for i in ids if i is not None)

    def clean_model_base_url(self) -> str:
        url: str = self.cleaned_data["model_base_url"]
        if url:
            try:
                egress.check(url)
            except egress.EgressRefused as exc:
                raise forms.ValidationError(str(exc)) from exc
        return url

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        channel, business = data.get("channel"), data.get("business")
        if channel and business and int(channel) not in self._channel_ids(int(business)):
            self.add_error("channel", gettext("This channel belongs to another business."))
        return data

    def _channel_ids(self, business_id: int) -> set[int]:
        business = self.businesses.get(business_id)
        return set(business.channels.values_list("pk", flat=True)) if business else set()

    def business_obj(self) -> Business:
        return self.businesses[int(self.cleaned_data["business"])]


def _visible_run(request: HttpRequest, run_id: int) -> ReplayRun:
    """A replay of one of the user's businesses: 403 for a non-admin, 404 for another's."""
    run = (
        ReplayRun.objects.filter(pk=run_id, business__in=require_business_admin(request))
        .select_related("business", "created_by")
        .first()
    )
    if run is None:
        raise Http404("no such replay")
    return run


@login_required
@require_http_methods(["GET", "POST"])
def replay_start(request: HttpRequest) -> HttpResponse:
    page = administered_business(request)
    businesses = page.businesses
    token = request.POST.get("upload") or request.GET.get("upload", "")
    staged = price_upload.take(token, request.user) if token else None
    initial: dict[str, Any] = {"upload": token}
    again = id_param(request.GET, "again")
    if again is not None:
        initial.update(_saved_set(_visible_run(request, again)))
    form = ReplayForm(request.POST or None, initial=initial, businesses=businesses)
    business = page.business
    form.initial.setdefault("business", business.pk)
    if staged is not None:
        business = next((b for b in businesses if b.pk == staged.business_id), business)
        form.initial["business"] = business.pk
    rules_form = CandidateRulesForm(
        request.POST or None, instance=assistant_settings(business.pk), prefix="rules"
    )
    if request.method == "POST" and form.is_valid():
        business = form.business_obj()
        candidate, problem = _candidate(form, rules_form, staged, business)
        if problem:
            form.add_error(None, problem)
        else:
            selection = engine.Selection(
                days=form.cleaned_data["days"],
                channel_id=int(form.cleaned_data["channel"])
                if form.cleaned_data["channel"]
                else None,
                reason=form.cleaned_data["reason"].strip(),
                chat_ids=form.cleaned_data["chat_ids"],
                limit=form.cleaned_data["limit"],
            )
            run = engine.start(business, request.user, selection, candidate)
            return redirect("settings_replay_run", run_id=run.pk)
    runs = ReplayRun.objects.filter(business__in=businesses).select_related("business")[:20]
    return render(
        request,
        "inbox/settings/replay_start.html",
        {"form": form, "rules_form": rules_form, "staged": staged, "runs": runs},
    )


def _saved_set(run: ReplayRun) -> dict[str, Any]:
    """The form's fields for the same conversations as an earlier replay (a saved set)."""
    chat_ids = sorted(set(run.turns.values_list("chat_id", flat=True)))
    return {
        "business": run.business_id,
        "days": run.selection.get("days", 7),
        "channel": run.selection.get("channel_id") or "",
        "reason": run.selection.get("reason", ""),
        "chat_ids": ", ".join(str(pk) for pk in chat_ids),
        "limit": run.selection.get("limit", 200),
    }


def _candidate(
    form: ReplayForm,
    rules_form: CandidateRulesForm,
    staged: price_upload.StagedUpload | None,
    business: Business,
) -> tuple[Candidate, str]:
    """The candidate the form describes, or why it describes none."""
    preview, channel_id = None, None
    if staged is not None:
        if staged.business_id != business.pk:
            return Candidate(), gettext("The staged price list belongs to another business.")
        if not staged.preview.ok:
            return Candidate(), gettext("The staged price list has errors; fix the file first.")
        preview, channel_id = staged.preview, staged.channel_id
    rules = None
    if form.cleaned_data["change_rules"]:
        if not rules_form.is_valid():
            return Candidate(), gettext("The edited rules are not valid: %(errors)s") % {
                "errors": rules_form.errors.as_text()
            }
        rules = {
            "business_rules": rules_form.cleaned_data["business_rules"],
            "handoff_reasons": rules_form.cleaned_data["reasons_text"],
            "forbidden_promises": rules_form.cleaned_data["promises_text"],
        }
    model = None
    if form.cleaned_data["model_base_url"]:
        model = CandidateModel(
            base_url=form.cleaned_data["model_base_url"],
            model=form.cleaned_data["model_name"] or "assistant",
            structured_output=form.cleaned_data["model_structured_output"] or "json_schema",
            api_key=form.cleaned_data["model_api_key"],
        )
    candidate = Candidate(preview, channel_id, rules, model)
    if candidate.empty:
        return candidate, gettext(
            "Choose something to try: a staged price list, edited rules or a model."
        )
    return candidate, ""


@login_required
@require_GET
def replay_run(request: HttpRequest, run_id: int) -> HttpResponse:
    """Progress while the worker runs (htmx asks again every second), then the report."""
    run = engine.settle(_visible_run(request, run_id))
    group = request.GET.get("group", "")
    rows = run.turns.select_related("chat")
    if group in ReplayTurn.Change.values:
        rows = rows.filter(change=group)
    show_phones = request.user.has_perm("assistant.view_replay_phones")
    candidate = Candidate.from_json(run.candidate)
    counts = (run.summary or {}).get("counts", {})
    total = (run.summary or {}).get("total", 0)
    groups = [
        (change.value, change.label, counts.get(change.value, 0),
         counts.get(change.value, 0) / total if total else 0.0)
        for change in ReplayTurn.Change
    ]  # fmt: skip
    return render(
        request,
        "inbox/settings/replay_run.html",
        {
            "run": run,
            "rows": [_row(r, show_phones) for r in rows],
            "groups": groups,
            "group": group,
            "changes": candidate.describe(),
            "gate": engine.gate(run),
            "appliable": engine.appliable(run),
            "running": run.status in (ReplayRun.Status.QUEUED, ReplayRun.Status.RUNNING),
        },
    )


def _row(row: ReplayTurn, show_phones: bool) -> dict[str, Any]:
    """One report line; phone numbers masked unless the viewer may see them."""
    chat = row.chat
    label = chat.customer_name or chat.customer_phone or chat.customer_key
    if not show_phones:
        label = chat.customer_name or mask_phone_numbers(chat.customer_phone or chat.customer_key)

    def side(answer: dict[str, Any]) -> dict[str, Any]:
        labels = {
            "action_label": action_label(str(answer.get("action", ""))),
            "reason_label": HandoffReason.label_for(str(answer.get("reason") or "")),
        }
        if show_phones:
            return {**answer, **labels}
        return {
            **answer,
            **labels,
            "reply": mask_phone_numbers(answer.get("reply", "")),
            "sent": mask_phone_numbers(answer.get("sent", "")),
        }

    return {
        "row": row,
        "chat_label": label,
        "customer_text": row.customer_text
        if show_phones
        else mask_phone_numbers(row.customer_text),
        "then": side(row.then),
        "now": side(row.now),
    }


@login_required
@require_POST
def replay_apply(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _visible_run(request, run_id)
    try:
        applied = engine.apply(run, request.user, confirmed=request.POST.get("confirm") == "1")
    except engine.GateClosed as exc:
        text = gettext("Not applied: %(why)s. Confirm to apply anyway.")
        messages.error(request, text % {"why": exc})
        return redirect("settings_replay_run", run_id=run.pk)
    except (engine.NotAppliable, egress.EgressRefused) as exc:
        messages.error(request, gettext("Not applied: %(why)s.") % {"why": exc})
        return redirect("settings_replay_run", run_id=run.pk)
    review_fixes.resolve_replayed(request.user, run)
    what = (" " + gettext("and") + " ").join(applied)
    messages.success(request, gettext("Applied %(what)s.") % {"what": what})
    return redirect("settings_replay_run", run_id=run.pk)


@login_required
@require_POST
def replay_discard(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _visible_run(request, run_id)
    if engine.discard(run):
        messages.success(request, gettext("Discarded the change; nothing was applied."))
    else:
        messages.error(request, gettext("This change was applied already."))
    return redirect("settings_replay_run", run_id=run.pk)
