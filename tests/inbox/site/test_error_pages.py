"""The 500 page when the database is down: no database access here (pytest-django refuses it,
as a dead database would), so the member's session cannot be read and the language middleware
fails; the page still renders, in the language the browser's cookie names."""

from __future__ import annotations

from django.test import Client


def test_with_the_database_down_the_500_page_speaks_the_cookies_language(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ROOT_URLCONF = "tests.inbox.site.boom_urls"
    browser = Client(raise_request_exception=False)
    browser.cookies["sessionid"] = "a-session-the-database-would-hold"
    browser.cookies["django_language"] = "ru"

    answer = browser.get("/inbox/")

    assert answer.status_code == 500
    body = answer.content.decode()
    assert '<html lang="ru">' in body
    assert "<h1>Что-то пошло не так</h1>" in body
    assert "Ошибка записана в журнал." in body


def test_a_failing_page_is_in_the_browsers_language(settings) -> None:  # type: ignore[no-untyped-def]
    settings.ROOT_URLCONF = "tests.inbox.site.boom_urls"
    answer = Client(raise_request_exception=False, HTTP_ACCEPT_LANGUAGE="kk").get("/boom/")

    assert answer.status_code == 500
    assert "<h1>Бірдеңе дұрыс болмады</h1>" in answer.content.decode()
