"""The business admin's page for canned replies, labels and whether managers see customers'
phone numbers masked. Limited to the businesses the user administers: a manager gets 403,
another business's reply or label is a 404."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods

from inbox.conversations.models import Business, CannedReply, Label
from inbox.web.administered import administered_business
from inbox.web.params import parse_id


class CannedReplyForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = CannedReply
        fields = ["title", "shortcut", "text"]
        widgets = {"text": forms.Textarea(attrs={"rows": 3})}
        labels = {"title": _("Title"), "shortcut": _("Shortcut"), "text": _("Text")}
        help_texts = {
            "shortcut": _("Typed after / to find it fast."),
            "text": _("May name {customer_name}, {manager_name} and {business_name}."),
        }


class LabelForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Label
        fields = ["name", "colour"]
        labels = {"name": _("Name"), "colour": _("Colour")}


class PrivacyForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = Business
        fields = ["mask_phone_for_managers"]
        labels = {"mask_phone_for_managers": _("Mask phone for managers")}
        help_texts = {
            "mask_phone_for_managers": _(
                "Show customers' phone numbers to managers with the middle digits hidden "
                "(business admins still see them whole)."
            )
        }


def _delete(model: type[CannedReply] | type[Label], business: Business, raw: str) -> None:
    row_id = parse_id(raw)
    if row_id is None:
        raise Http404("bad id")
    deleted, _ = model.objects.filter(pk=row_id, business=business).delete()
    if not deleted:
        raise Http404("no such row")


@login_required
@require_http_methods(["GET", "POST"])
def replies_labels(request: HttpRequest) -> HttpResponse:
    page = administered_business(request)
    business = page.business
    reply_form = CannedReplyForm(prefix="reply")
    label_form = LabelForm(prefix="label")
    privacy_form = PrivacyForm(instance=business, prefix="privacy")
    if request.method == "POST":
        action = request.POST.get("action", "")
        if action == "add_reply":
            reply_form = CannedReplyForm(request.POST, prefix="reply")
            if reply_form.is_valid():
                reply_form.instance.business = business
                reply_form.save()
                messages.success(request, gettext("Canned reply added."))
                return redirect(f"{request.path}?business={business.pk}")
        elif action == "add_label":
            label_form = LabelForm(request.POST, prefix="label")
            if label_form.is_valid():
                label_form.instance.business = business
                try:
                    with transaction.atomic():
                        label_form.save()
                except IntegrityError:
                    label_form.add_error(
                        "name", gettext("This business already has a label so named.")
                    )
                else:
                    messages.success(request, gettext("Label added."))
                    return redirect(f"{request.path}?business={business.pk}")
        elif action == "delete_reply":
            _delete(CannedReply, business, request.POST.get("id", ""))
            return redirect(f"{request.path}?business={business.pk}")
        elif action == "delete_label":
            _delete(Label, business, request.POST.get("id", ""))
            return redirect(f"{request.path}?business={business.pk}")
        elif action == "privacy":
            privacy_form = PrivacyForm(request.POST, instance=business, prefix="privacy")
            if privacy_form.is_valid():
                privacy_form.save()
                messages.success(request, gettext("Saved."))
                return redirect(f"{request.path}?business={business.pk}")
    return render(
        request,
        "inbox/settings/replies_labels.html",
        {
            "business": business,
            "businesses": page.businesses,
            "replies": CannedReply.objects.filter(business=business),
            "labels": Label.objects.filter(business=business),
            "reply_form": reply_form,
            "label_form": label_form,
            "privacy_form": privacy_form,
        },
    )
