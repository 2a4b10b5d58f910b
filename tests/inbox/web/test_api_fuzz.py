"""Schemathesis fuzzes the JSON API from its own OpenAPI document, against a real daphne process:
whatever it sends (valid or not), the answer is never a 500, and every status and body it gets
is one the document lists (400, 401 and 422 included)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from inbox.conversations.models import Chat
from inbox.web.api_tokens import create_token
from tests.inbox.tenants import tenant
from tests.processes import ProcessGroup

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]

EXAMPLES_PER_OPERATION = 30


@pytest.fixture(scope="module")
def web(subprocess_env: dict[str, str]) -> Iterator[str]:
    group = ProcessGroup(subprocess_env)
    base = group.start_daphne("api-fuzz-web")
    yield base
    group.stop_all()


@pytest.fixture
def token() -> str:
    """A manager of one business with chats of both businesses in the database."""
    own = tenant("A")
    tenant("B")
    Chat.objects.filter(pk=own.chat.pk).update(customer_name="Fuzzed")
    return create_token(own.manager, "fuzz")[1]


def test_no_server_error_on_any_generated_request(web: str, token: str) -> None:
    """Every operation, valid and invalid inputs. (Schemathesis's pytest plugin does not run
    under pytest 9, so the operations are driven with hypothesis directly.)"""
    schema = schemathesis.openapi.from_url(f"{web}/api/v1/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 8
    headers = {"Authorization": f"Bearer {token}"}
    statuses: Counter[int] = Counter()
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES_PER_OPERATION,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
            )
            def call(case: Any) -> None:
                response = case.call_and_validate(
                    headers=headers,
                    timeout=30,
                    # every status and body is one the OpenAPI document lists
                    checks=[
                        not_a_server_error,
                        status_code_conformance,
                        response_schema_conformance,
                    ],
                )
                statuses[response.status_code] += 1

            try:
                call()
            except Exception as exc:
                raise AssertionError(f"{operation.label} ({mode.value}): {exc}") from exc
    # The fuzzing reached the code behind validation, not only the 422 answers.
    assert statuses[200] > 50, statuses
    assert statuses[422] > 20, statuses
    assert statuses[404] > 5, statuses


def test_the_document_lists_the_400_401_and_422_answers_the_api_really_gives(
    web: str, token: str
) -> None:
    import httpx

    document = httpx.get(f"{web}/api/v1/openapi.json", timeout=10).json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert {"400", "401", "422"} <= set(operation["responses"]), (method, path)
    chat = Chat.objects.get(customer_name="Fuzzed")
    reply = f"{web}/api/v1/chats/{chat.pk}/reply"
    bearer = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    assert httpx.post(reply, json={"text": "hi"}, timeout=10).status_code == 401
    assert httpx.post(reply, content=b"{not json", headers=bearer, timeout=10).status_code == 400
    assert httpx.post(reply, json={"text": 5}, headers=bearer, timeout=10).status_code == 422
