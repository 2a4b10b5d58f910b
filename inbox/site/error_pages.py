"""The site's error pages in the visitor's language (inbox/site/templates/4xx.html, 500.html).

Django renders a 400 or 500 page wherever the exception surfaced, which may be outside
`MemberLanguageMiddleware` (a failure in an earlier middleware, or the database down while the
middleware looks up the member): the language is then read again here without the database,
from what the middleware already chose for this request, else the browser's cookie or
Accept-Language (`local_language.visitor_language`).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.views import defaults

from inbox.web.local_language import visitor_language


def _language(request: HttpRequest) -> str:
    chosen = getattr(request, "LANGUAGE_CODE", "")
    return str(chosen) if chosen else visitor_language(request)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    with translation.override(_language(request)):
        return defaults.bad_request(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    with translation.override(_language(request)):
        return defaults.server_error(request)
