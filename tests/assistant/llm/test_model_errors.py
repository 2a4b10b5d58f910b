"""Model-server errors by class, against the OpenAI emulator over real HTTP and the real Redis:
configuration errors trip the breaker at once with their cause, a prompt over the context is
retried once with the compact prompt, a 429 waits for its Retry-After (within a bound)."""

from __future__ import annotations

import time

import pytest

from assistant.llm.client import ModelMisconfigured, ModelUnavailable
from assistant.llm.prompt import build_messages
from assistant.models import AssistantSettings
from tests.assistant.builders import item, knowledge, turn
from tests.assistant.conftest import make_client, make_guard
from tests.emulators.openai_server import OpenAIEmulator, Step

CONFIG = AssistantSettings()


# A list long enough that the compact prompt's retrieval is smaller than the whole of it.
LONG_LIST = knowledge(
    tuple(
        item(f"SKU-{n}", f"{kind} model {n}", str((n + 1) * 1000))
        for n, kind in enumerate(["Oak table", "Sofa", "Office chair", "Wardrobe"] * 12)
    )
)


def messages_for(mode: str, compact: bool = False):
    return build_messages(
        turn("how much is the office chair?"), LONG_LIST, CONFIG, mode, compact=compact
    )


@pytest.mark.parametrize(
    ("step", "cause"),
    [
        (Step.bad_key(), "HTTP 401: the model server refused the API key"),
        (Step.unknown_model("assistant"), "HTTP 404: unknown model"),
        (Step.schema_rejected(), "HTTP 422: the server refused the request's schema"),
        (Step.server_error(400, "temperature must be >= 0"), "HTTP 400: the server refused"),
    ],
)
def test_a_configuration_error_opens_the_breaker_at_once_and_names_the_cause(emu, step, cause):
    guard = make_guard(failures=5)
    client = make_client(emu.base_url, guard=guard, max_retries=3)
    emu.script(step)
    with pytest.raises(ModelMisconfigured, match=cause):
        client.complete_decision(messages_for, business_id=1)
    assert len(emu.chat_requests) == 1  # not retried: the same request would fail the same way
    assert guard.state(emu.base_url) == "open"  # after one answer, not after five
    assert cause in guard.cause(emu.base_url)
    if step.status == 422:  # FastAPI's {"detail": [...]} body, shown as it came
        assert "Input should be 'text' or 'json_object'" in guard.cause(emu.base_url)

    # While open, turns fail at once with the same cause, without calling the server.
    with pytest.raises(ModelMisconfigured, match=cause):
        client.complete_decision(messages_for, business_id=1)
    assert len(emu.chat_requests) == 1


def test_a_real_wrong_key_is_misconfigured():
    with OpenAIEmulator(api_key="the-right-key") as server:
        client = make_client(server.base_url)  # sends "key"
        with pytest.raises(ModelMisconfigured, match="401"):
            client.complete_decision(messages_for, business_id=1)


def test_the_probe_after_the_cooldown_closes_the_breaker_and_clears_the_cause(emu):
    guard = make_guard(cooldown_seconds=0.3)
    client = make_client(emu.base_url, guard=guard)
    emu.script(Step.unknown_model())
    with pytest.raises(ModelMisconfigured):
        client.complete_decision(messages_for, business_id=1)
    time.sleep(0.35)  # the breaker's cool-down itself is what is tested
    assert client.complete_decision(messages_for, business_id=1).decision
    assert (guard.state(emu.base_url), guard.cause(emu.base_url)) == ("closed", "")


def test_a_misconfigured_primary_falls_back_to_the_secondary(emu, second_emu):
    emu.script(Step.bad_key())
    client = make_client(emu.base_url, secondary=(second_emu.base_url,))
    completion = client.complete_decision(messages_for, business_id=1)
    assert completion.endpoint == "secondary"


def test_misconfigured_and_down_together_is_unavailable_not_misconfigured(emu):
    from tests.emulators.openai_server import refused_base_url

    emu.script(Step.bad_key())
    client = make_client(emu.base_url, secondary=(refused_base_url(),))
    with pytest.raises(ModelUnavailable) as caught:
        client.complete_decision(messages_for, business_id=1)
    assert not isinstance(caught.value, ModelMisconfigured)


def test_a_prompt_over_the_context_is_retried_with_the_compact_prompt():
    full = messages_for("json_schema")
    compact = messages_for("json_schema", compact=True)
    full_tokens = sum(len(m["content"]) for m in full) // 4
    compact_tokens = sum(len(m["content"]) for m in compact) // 4
    assert compact_tokens < full_tokens
    limit = (full_tokens + compact_tokens) // 2 + 256  # the full one overflows, compact fits
    with OpenAIEmulator(max_model_len=limit) as server:
        guard = make_guard()
        client = make_client(server.base_url, guard=guard, max_tokens=256)
        completion = client.complete_decision(messages_for, business_id=1)
        first, second = server.chat_requests
        assert "Matching items from the price list" in second.messages[1]["content"]
        assert len(second.messages[0]["content"]) < len(first.messages[0]["content"])
        assert completion.decision.reply_to_customer.startswith("Echo:")
        assert guard.state(server.base_url) == "closed"  # the server is fine


def test_llama_cpp_context_overflow_body_is_recognised(emu):
    emu.script(Step.context_too_long(server="llama.cpp"), Step.decision(reply="compact ok"))
    completion = make_client(emu.base_url).complete_decision(messages_for, business_id=1)
    assert completion.decision.reply_to_customer == "compact ok"
    assert "Matching items" in emu.chat_requests[1].messages[1]["content"]


def test_a_context_too_small_even_for_the_compact_prompt_is_misconfigured():
    with OpenAIEmulator(max_model_len=300) as server:
        guard = make_guard()
        client = make_client(server.base_url, guard=guard, max_tokens=256)
        with pytest.raises(ModelMisconfigured, match="maximum context length is 300"):
            client.complete_decision(messages_for, business_id=1)
        assert len(server.chat_requests) == 2  # the full prompt, then the compact one
        assert guard.state(server.base_url) == "open"


def test_429_waits_for_retry_after_then_succeeds(emu):
    emu.script(Step.rate_limited(retry_after=1), Step.decision(reply="after 429"))
    client = make_client(emu.base_url, max_retries=1, backoff=0.01)
    started = time.monotonic()
    completion = client.complete_decision(messages_for, business_id=1)
    waited = time.monotonic() - started
    assert completion.decision.reply_to_customer == "after 429"
    assert 1.0 <= waited < 3.0
    first, second = emu.chat_requests
    assert second.at - first.at >= 1.0


def test_a_long_retry_after_is_bounded(emu):
    emu.script(Step.rate_limited(retry_after=3600), Step.decision(reply="soon"))
    client = make_client(emu.base_url, max_retries=1, retry_after_max=0.5)
    started = time.monotonic()
    assert client.complete_decision(messages_for, business_id=1).decision.reply_to_customer == (
        "soon"
    )
    assert time.monotonic() - started < 2.0


def test_429_is_a_transient_failure_not_a_configuration_error(emu):
    emu.script(*[Step.rate_limited(retry_after=0)] * 4)
    guard = make_guard(failures=5)
    client = make_client(emu.base_url, guard=guard, max_retries=1)
    with pytest.raises(ModelUnavailable) as caught:
        client.complete_decision(messages_for, business_id=1)
    assert not isinstance(caught.value, ModelMisconfigured)
    assert guard.state(emu.base_url) == "closed"  # 2 failures of 5
    assert guard.cause(emu.base_url) == ""
