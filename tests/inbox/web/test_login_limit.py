"""The login rate limit: per username and address, in Redis, with a clear message."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests import factories
from tests.inbox.tenants import PASSWORD

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def user() -> Any:
    return factories.manager(factories.business(), username="anna")


def login(address: str, password: str, url: str = "/accounts/login/") -> Any:
    return Client(REMOTE_ADDR=address).post(url, {"username": "anna", "password": password})


def test_five_failures_lock_that_username_from_that_address_only(user: Any) -> None:
    for _ in range(5):
        assert login("10.0.0.1", "wrong").status_code == 200

    refused = login("10.0.0.1", PASSWORD)
    elsewhere = login("10.0.0.2", PASSWORD)

    assert refused.status_code == 200
    assert "Too many failed attempts" in refused.content.decode()
    assert "Try again in 15 minutes" in refused.content.decode()
    assert elsewhere.status_code == 302  # the real user on another address is not locked out


def test_a_successful_login_clears_the_count(user: Any) -> None:
    for _ in range(4):
        login("10.0.0.3", "wrong")
    assert login("10.0.0.3", PASSWORD).status_code == 302
    for _ in range(4):
        login("10.0.0.3", "wrong")
    assert login("10.0.0.3", PASSWORD).status_code == 302


def test_the_admin_login_is_limited_too(user: Any) -> None:
    user.is_staff = True
    user.save()
    for _ in range(5):
        login("10.0.0.4", "wrong", "/admin/login/")
    refused = login("10.0.0.4", PASSWORD, "/admin/login/")
    assert "Too many failed attempts" in refused.content.decode()


def test_one_address_guessing_many_usernames_is_capped(user: Any, settings: Any) -> None:
    settings.LOGIN_MAX_FAILURES_PER_ADDRESS = 8
    for n in range(8):
        Client(REMOTE_ADDR="10.0.0.5").post(
            "/accounts/login/", {"username": f"guess{n}", "password": "x"}
        )
    assert "Too many failed attempts" in login("10.0.0.5", PASSWORD).content.decode()
    assert login("10.0.0.6", PASSWORD).status_code == 302
