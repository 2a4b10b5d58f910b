"""The Team page for business admins: invite or create managers, roles, channels, chat caps,
the name the team and customers see of each member, removal, and the business's
auto-assignment switch. Every write is a call into `inbox.conversations.team`; every lookup is
limited to the businesses the user administers (a manager gets 403, another business's member
or `?business=` is a 404)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_http_methods, require_POST

from inbox.conversations import names, online, team
from inbox.conversations.models import Business, Channel, Membership
from inbox.web.administered import administered_business, require_business_admin
from inbox.web.params import parse_id


class ChannelChoices(forms.ModelMultipleChoiceField):  # type: ignore[type-arg]
    """Channels by their own name: the page is already about one business. A value that is
    no id is refused before the query (a 20-digit one overflows the database's integer)."""

    def clean(self, value: Any) -> Any:
        if isinstance(value, list | tuple) and any(parse_id(v) is None for v in value):
            raise forms.ValidationError(
                self.error_messages["invalid_pk_value"], code="invalid_pk_value",
                params={"pk": next(v for v in value if parse_id(v) is None)},
            )  # fmt: skip
        return super().clean(value)

    def label_from_instance(self, obj: Channel) -> str:
        return obj.name


class MemberFields(forms.Form):
    role = forms.ChoiceField(
        label=_("Role"), choices=Membership.Role.choices, initial=Membership.Role.MANAGER
    )
    channels = ChannelChoices(
        queryset=Channel.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=_("Channels"),
        help_text=_("Managers: none ticked = every channel."),
    )
    chat_cap = forms.IntegerField(
        label=_("Chat cap"),
        required=False,
        min_value=0,
        max_value=team.MAX_CHAT_CAP,
        help_text=_("Most open chats auto-assignment gives them; empty = no cap."),
    )

    def __init__(self, *args: Any, business: Business, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        channels = self.fields["channels"]
        assert isinstance(channels, forms.ModelMultipleChoiceField)
        channels.queryset = business.channels.order_by("name")


class MemberRow(MemberFields):
    """A member's row: their settings and the name this business shows of them."""

    display_name = forms.CharField(
        label=_("Display name"),
        required=False,
        max_length=names.MAX_LENGTH,
        help_text=_("What the team and customers read; empty = their own name."),
    )
    field_order = ["display_name", "role", "channels", "chat_cap"]


class InviteForm(MemberFields):
    # The User model's own rule, so a name with markup is a form error on the page.
    username = forms.CharField(
        label=_("Username"), max_length=150, validators=[UnicodeUsernameValidator()]
    )
    email = forms.EmailField(label=_("Email"))
    delivery = forms.ChoiceField(
        label=_("How"),
        choices=[
            ("email", _("Email them a link to set their password")),
            ("link", _("Show me the one-time link to hand over myself")),
        ],
        initial="email",
        widget=forms.RadioSelect,
    )
    field_order = ["username", "email", "role", "channels", "chat_cap", "delivery"]


def _members(business: Business) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(business=business)
        .select_related("user")
        .prefetch_related("channels")
        .order_by("user__username")
    )


def _page(request: HttpRequest, business: Business, businesses: list[Business],
          invite: InviteForm, **extra: Any) -> HttpResponse:  # fmt: skip
    present = online.online_user_ids(business.pk)
    rows = [
        (
            member,
            MemberRow(
                prefix=f"m{member.pk}",
                business=business,
                initial={
                    "display_name": member.display_name,
                    "role": member.role,
                    "channels": list(member.channels.all()),
                    "chat_cap": member.chat_cap,
                },
            ),
            member.user_id in present,
        )
        for member in _members(business)
    ]
    context = {"business": business, "businesses": businesses, "invite": invite, "rows": rows}
    return render(request, "inbox/settings/team.html", {**context, **extra})


def _back(business: Business) -> HttpResponse:
    return redirect(f"{reverse('settings_team')}?business={business.pk}")


@login_required
@require_http_methods(["GET", "POST"])
def team_page(request: HttpRequest) -> HttpResponse:
    """The members of one business and the invite form (POST: invite)."""
    page = administered_business(request)
    business, businesses = page.business, page.businesses
    invite = InviteForm(request.POST or None, business=business)
    if request.method != "POST" or not invite.is_valid():
        return _page(request, business, businesses, invite)
    data = invite.cleaned_data
    try:
        membership = team.add_member(
            business,
            username=data["username"],
            email=data["email"],
            role=data["role"],
            channels=list(data["channels"]),
            chat_cap=data["chat_cap"],
        )
    except team.TeamError as exc:
        invite.add_error(None, str(exc))
        return _page(request, business, businesses, invite)
    link = request.build_absolute_uri(team.password_link_path(membership.user))
    if data["delivery"] == "email":
        team.send_invitation(membership, link)
        messages.success(request, f"Invited {data['username']}: the link went to {data['email']}.")
        return _back(business)
    # Shown once, in this response only: it is not stored anywhere.
    return _page(
        request, business, businesses, InviteForm(business=business), new_link=link,
        new_member=membership,
    )  # fmt: skip


def _administered_membership(request: HttpRequest, membership_id: int) -> Membership:
    businesses = require_business_admin(request)
    membership = (
        Membership.objects.select_related("business", "user")
        .filter(pk=membership_id, business__in=businesses)
        .first()
    )
    if membership is None:
        raise Http404("no such member")
    return membership


@login_required
@require_POST
def member_update(request: HttpRequest, membership_id: int) -> HttpResponse:
    membership = _administered_membership(request, membership_id)
    form = MemberRow(request.POST, prefix=f"m{membership.pk}", business=membership.business)
    if not form.is_valid():
        messages.error(request, f"Not saved: {form.errors.as_text()}")
        return _back(membership.business)
    try:
        team.update_member(
            membership,
            role=form.cleaned_data["role"],
            channels=list(form.cleaned_data["channels"]),
            chat_cap=form.cleaned_data["chat_cap"],
        )
        if f"m{membership.pk}-display_name" in request.POST:
            team.set_display_name(membership, form.cleaned_data["display_name"])
    except team.TeamError as exc:
        messages.error(request, f"Not saved: {exc}")
    else:
        messages.success(request, f"Saved {membership.user.get_username()}.")
    return _back(membership.business)


@login_required
@require_POST
def member_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    membership = _administered_membership(request, membership_id)
    name = membership.user.get_username()
    try:
        removal = team.remove_member(membership.business, membership.user_id)
    except team.TeamError as exc:
        messages.error(request, f"Not removed: {exc}")
        return _back(membership.business)
    note = (
        " and deactivated: logged out everywhere, API tokens revoked" if removal.deactivated else ""
    )
    messages.success(request, f"Removed {name} from {membership.business.name}{note}.")
    return _back(membership.business)


@login_required
@require_POST
def auto_assign(request: HttpRequest) -> HttpResponse:
    business = administered_business(request).business
    enabled = request.POST.get("auto_assign") == "on"
    team.set_auto_assign(business, enabled)
    messages.success(request, f"Auto-assignment is {'on' if enabled else 'off'}.")
    return _back(business)
