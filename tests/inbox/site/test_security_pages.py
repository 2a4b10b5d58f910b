"""What an anonymous visitor can learn from the site: error pages that name nothing inside, and
the browser-side protections (Content-Security-Policy and the usual headers) on every page."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

# What Django's debug pages show and ours must not.
LEAKS = ("URLconf", "urlpatterns", "Traceback", "SECRET_KEY", "DATABASES", "settings.py",
         "hunter2", "Django tried these URL patterns")  # fmt: skip


def _assert_no_leak(body: str) -> None:
    for word in LEAKS:
        assert word not in body, word


def test_an_unknown_address_gets_the_sites_own_404_page() -> None:
    answer = Client().get("/no/such/page/")

    assert answer.status_code == 404
    body = answer.content.decode()
    assert "Page not found" in body
    assert 'href="/inbox/"' in body
    _assert_no_leak(body)


def test_a_failing_page_gets_the_sites_own_500_page(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ROOT_URLCONF = "tests.inbox.site.boom_urls"
    answer = Client(raise_request_exception=False).get("/boom/")

    assert answer.status_code == 500
    body = answer.content.decode()
    assert "Something went wrong" in body
    _assert_no_leak(body)
    assert "Content-Security-Policy" in answer.headers


@pytest.mark.parametrize("path", ["/accounts/login/", "/no/such/page/", "/inbox/sandbox/"])
def test_pages_carry_a_strict_content_security_policy_and_the_security_headers(path: str) -> None:
    answer = Client().get(path)

    policy = dict(
        directive.strip().split(" ", 1)
        for directive in answer.headers["Content-Security-Policy"].split(";")
        if directive.strip()
    )
    assert policy["default-src"] == "'self'"
    assert policy["script-src"] == "'self'"  # no 'unsafe-inline', no 'unsafe-eval'
    assert policy["style-src"] == "'self'"
    assert policy["connect-src"] == "'self'"  # the websocket is same-origin
    assert policy["frame-ancestors"] == "'none'"
    assert policy["object-src"] == "'none'"
    assert policy["form-action"] == "'self'"
    assert answer.headers["X-Content-Type-Options"] == "nosniff"
    assert answer.headers["X-Frame-Options"] == "DENY"
    assert answer.headers["Referrer-Policy"] == "same-origin"
    assert "camera=()" in answer.headers["Permissions-Policy"]
