"""The "forgot your password" page, with a limit on how many mails it sends.

Without one, anyone could make the server mail a user again and again (a nuisance for them, a
reputation cost for the sending domain) or spray every address. Requests are counted in Redis
per client address (`PASSWORD_RESET_MAX_PER_ADDRESS`) and per e-mail address asked for
(`PASSWORD_RESET_MAX_PER_ACCOUNT`) within `PASSWORD_RESET_WINDOW_SECONDS`. Over either limit
nothing is sent, and the page answers exactly as it always does ("if an account exists, a mail
was sent"), as it does for an address nobody uses: the answer never tells whether an account
exists, nor whether the limit was hit.

The mail is written in the language of the member whose password it resets (their own choice,
else their business's, as their pages: `local_language.language_of`), not the asking browser's.
The pages around it speak the visitor's language (the middleware).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.views import PasswordResetView
from django.http import HttpResponse, HttpResponseRedirect
from django.utils import translation
from django.utils.translation import gettext_noop

from inbox.web.local_language import language_of
from inbox.web.login_limit import client_address, count_in_window, digest

log = logging.getLogger(__name__)

# Django's own words on the "set your password" form, which its catalogues leave untranslated
# in Kazakh: ours (locale/) take precedence, so listing them here gives them a translation.
DJANGO_WORDS = (
    gettext_noop("The two password fields didn’t match."),
    gettext_noop("This password is too common."),
    gettext_noop("This password is entirely numeric."),
    gettext_noop("The password is too similar to the %(verbose_name)s."),
)


def may_send(email: str, address: str) -> bool:
    """Count this request against the client address and the e-mail address; True while both
    are within their limits."""
    window = int(settings.PASSWORD_RESET_WINDOW_SECONDS)
    address_hash = digest(address)
    if count_in_window(f"reset:addr:{address_hash}", window) > int(
        settings.PASSWORD_RESET_MAX_PER_ADDRESS
    ):
        log.warning("password_reset.rate_limited", extra={"address_hash": address_hash[:8]})
        return False
    account_hash = digest(email.strip().lower())
    if count_in_window(f"reset:email:{account_hash}", window) > int(
        settings.PASSWORD_RESET_MAX_PER_ACCOUNT
    ):
        log.warning("password_reset.rate_limited", extra={"account_hash": account_hash[:8]})
        return False
    return True


class MemberLanguageResetForm(PasswordResetForm):
    def send_mail(
        self,
        subject_template_name: str,
        email_template_name: str,
        context: dict[str, Any],
        from_email: str | None,
        to_email: str,
        html_email_template_name: str | None = None,
    ) -> None:
        """The mail in its reader's language: the member whose password is reset."""
        with translation.override(language_of(context["user"])):
            super().send_mail(
                subject_template_name,
                email_template_name,
                context,
                from_email,
                to_email,
                html_email_template_name,
            )


class RateLimitedPasswordResetView(PasswordResetView):
    form_class = MemberLanguageResetForm
    # .html, not Django's .txt, so that `locale_build --extract` finds its words.
    subject_template_name = "registration/password_reset_subject.html"

    def form_valid(self, form: PasswordResetForm) -> HttpResponse:
        if may_send(str(form.cleaned_data["email"]), client_address(self.request)):
            return super().form_valid(form)
        return HttpResponseRedirect(self.get_success_url())


password_reset = RateLimitedPasswordResetView.as_view()
