""" "Forgot your password" sends a bounded number of mails: per client address and per e-mail
address asked for. Past the limit the page answers exactly as before, so it tells no one
whether an account exists or that a limit was hit."""

from __future__ import annotations

from typing import Any

import pytest
from django.core import mail
from django.test import Client

from tests import factories

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/accounts/password_reset/"


@pytest.fixture
def anna() -> Any:
    user = factories.manager(factories.business(), username="anna")
    user.email = "anna@example.com"
    user.save()
    return user


def ask(email: str, address: str) -> Any:
    return Client(REMOTE_ADDR=address).post(URL, {"email": email})


def test_ten_requests_for_one_account_send_at_most_three_mails(anna: Any) -> None:
    answers = [ask("anna@example.com", f"198.51.100.{n}") for n in range(10)]

    assert len(mail.outbox) == 3
    assert {answer.status_code for answer in answers} == {302}
    assert {answer["Location"] for answer in answers} == {"/accounts/password_reset/done/"}


def test_one_address_asking_for_many_accounts_sends_at_most_five_mails() -> None:
    business = factories.business()
    for n in range(10):
        user = factories.manager(business, username=f"user{n}")
        user.email = f"user{n}@example.com"
        user.save()

    answers = [ask(f"user{n}@example.com", "198.51.100.7") for n in range(10)]

    assert len(mail.outbox) == 5
    assert {answer["Location"] for answer in answers} == {"/accounts/password_reset/done/"}
    assert ask("user9@example.com", "198.51.100.8").status_code == 302
    assert len(mail.outbox) == 6  # another address is not held back


def test_over_the_limit_the_answer_is_the_one_an_unknown_address_gets(anna: Any) -> None:
    for _ in range(3):
        ask("anna@example.com", "198.51.100.9")
    limited = Client(REMOTE_ADDR="198.51.100.10").post(
        URL, {"email": "anna@example.com"}, follow=True
    )
    unknown = Client(REMOTE_ADDR="198.51.100.11").post(
        URL, {"email": "no@example.com"}, follow=True
    )

    assert len(mail.outbox) == 3
    assert limited.redirect_chain == unknown.redirect_chain
    assert limited.content == unknown.content
