"""The inbox speaks each member's language: English (the source text), Russian or Kazakh
(settings.LANGUAGES; the catalogues are in locale/, docs/i18n.md).

Pages: `MemberLanguageMiddleware` activates the language of the user's membership (the first
business by name, as `local_time` picks the time zone): the member's own choice
(`Membership.ui_language`, on "My profile and notifications"), else the business's default
(`Business.ui_language`), else English. A visitor who is not signed in (the login and
password-reset pages) gets the language of the last member who signed in on this browser (a
cookie this middleware sets), else the browser's Accept-Language among ours, else English.

Websocket fragments are rendered once per business and sent to every member's tab, without a
request: `fragments.py` renders them in the business's default language
(`business_language`), so one rendering serves the whole team. A member whose own choice
differs reads pushed rows in the team's language until the page is next loaded. A change of
the default reaches the pushes within `CACHE_SECONDS` (at once in the process that saved it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.utils.html import json_script
from django.utils.safestring import SafeString
from django.utils.translation import gettext, gettext_noop

from inbox.conversations import access
from inbox.conversations.models import Business

DEFAULT = "en"
CODES = frozenset(code for code, _ in settings.LANGUAGES)
COOKIE_MAX_AGE = 365 * 24 * 3600
# A push renders several fragments per event: the language is read once per business a minute.
CACHE_SECONDS = 60.0
_languages: dict[int, tuple[float, str]] = {}


# The words the inbox's scripts write into the page (static/inbox/*.js read them, by their
# English text, from the page's "inbox-words" JSON; a word missing there stays English).
SCRIPT_WORDS = (
    gettext_noop("Live"),
    gettext_noop("Reconnecting…"),
    gettext_noop("waiting %(since)s"),
    gettext_noop("%(n)s min"),
    gettext_noop("%(hours)s h %(minutes)s min"),
    gettext_noop("Waiting for a human"),
    gettext_noop("A customer"),
    gettext_noop("Open chat"),
    gettext_noop("Take over from %(name)s?"),
    gettext_noop("another manager"),
    gettext_noop("Also viewing: %(names)s"),
    gettext_noop("%(names)s is typing…"),
    gettext_noop("%(names)s are typing…"),
)


def script_words() -> SafeString:
    """The scripts' words in the active language, as a JSON data block (not executed, so the
    Content-Security-Policy allows it); nothing for English, the scripts' own words."""
    words = {english: gettext(english) for english in SCRIPT_WORDS}
    translated = {english: word for english, word in words.items() if word != english}
    return json_script(translated, "inbox-words") if translated else SafeString("")


def _known(code: str | None) -> str:
    return code if code in CODES else DEFAULT


def language_of(user: AbstractBaseUser | AnonymousUser) -> str:
    """The language a signed-in user reads the inbox in."""
    membership = (
        access.memberships(user)
        .order_by("business__name")
        .values_list("ui_language", "business__ui_language")
        .first()
    )
    if membership is None:
        return DEFAULT
    own, business_default = membership
    return _known(own or business_default)


def business_language(business_id: int) -> str:
    """The business's default inbox language (its members' pushed fragments)."""
    now = time.monotonic()
    cached = _languages.get(business_id)
    if cached is not None and now - cached[0] < CACHE_SECONDS:
        return cached[1]
    code = _known(
        Business.objects.filter(pk=business_id).values_list("ui_language", flat=True).first()
    )
    _languages[business_id] = (now, code)
    return code


def forget(business_id: int) -> None:
    """A business's default changed: the next push reads it again."""
    _languages.pop(business_id, None)


def forget_all() -> None:
    """Tests: a business id may come back with another language."""
    _languages.clear()


@contextmanager
def business_words(business_id: int) -> Iterator[None]:
    with translation.override(business_language(business_id)):
        yield


def visitor_language(request: HttpRequest) -> str:
    """The language of a visitor not (or not yet) known as a member: the last member's on this
    browser (the cookie), else the browser's Accept-Language among ours, else English. Reads no
    database, so the 500 page can use it when the database is what failed."""
    cookie = request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME)
    if cookie in CODES:
        return str(cookie)
    return _known(translation.get_language_from_request(request, check_path=False))


API_PATH = "/api/"


class MemberLanguageMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        signed_in = user is not None and user.is_authenticated
        if request.path.startswith(API_PATH):
            code = "en"  # the JSON API speaks to programs: one language, whoever calls
        elif signed_in:
            code = language_of(user)  # type: ignore[arg-type]
        else:
            code = visitor_language(request)
        request.LANGUAGE_CODE = code
        with translation.override(code):
            response = self.get_response(request)
        response.headers.setdefault("Content-Language", code)
        remembered = request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME)
        page = not request.path.startswith(API_PATH)  # the API's English is no one's choice
        if signed_in and page and remembered != code:
            response.set_cookie(
                settings.LANGUAGE_COOKIE_NAME,
                code,
                max_age=COOKIE_MAX_AGE,
                samesite="Lax",
                secure=settings.SESSION_COOKIE_SECURE,
                httponly=True,
            )
        return response
