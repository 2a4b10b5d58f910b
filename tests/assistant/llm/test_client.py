"""The LLM client against the OpenAI-compatible emulator over real HTTP, with the real Redis:
structured output and repair, retries, breaker, admission, replicas, fallback, cache salt."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest
from prometheus_client import REGISTRY

from assistant.llm.client import (
    ModelOutputError,
    ModelUnavailable,
    cache_salt_for,
    parse_decision,
    sse_events,
)
from assistant.llm.prompt import build_messages
from assistant.llm.resilience import replica_label
from assistant.models import AssistantSettings
from assistant.schema import Action
from tests.assistant.builders import knowledge, turn
from tests.assistant.conftest import make_client, make_guard
from tests.emulators.openai_server import OpenAIEmulator, Step, decision_json, refused_base_url
from tests.processes import ROOT, wait_for

CONFIG = AssistantSettings()


def messages_for(mode: str):
    return build_messages(turn("how much is the office chair?"), knowledge(), CONFIG, mode)


def test_streamed_json_schema_answer_with_salt_usage_and_ttft(emu):
    emu.script(Step.decision(reply="Office chair Lux: 45 000 KZT", token_delay=0.001))
    completion = make_client(emu.base_url).complete_decision(messages_for, business_id=7)
    assert completion.decision.reply_to_customer == "Office chair Lux: 45 000 KZT"
    assert (completion.endpoint, completion.repaired, completion.first_valid) == (
        "primary",
        False,
        True,
    )
    assert completion.ttft_s is not None
    assert completion.tokens_in > 100
    assert completion.tokens_out > 5
    request = emu.chat_requests[0]
    assert request.stream
    assert request.cache_salt == cache_salt_for(7)
    assert request.response_format["type"] == "json_schema"
    assert request.response_format["json_schema"]["schema"]["title"] == "Decision"
    assert not emu.script_errors


def test_json_object_mode_puts_the_schema_in_the_prompt_for_llama_cpp_like_servers():
    with OpenAIEmulator(reject_json_schema=True) as llama:
        client = make_client(llama.base_url, mode="json_object", stream=False)
        completion = client.complete_decision(messages_for, business_id=1)
        assert completion.decision.action == Action.ANSWER
        request = llama.chat_requests[0]
        assert request.response_format["type"] == "json_object"
        assert '"reply_to_customer"' in request.messages[0]["content"]  # the schema
        # The same server refuses json_schema with HTTP 500, as llama.cpp does.
        with pytest.raises(ModelUnavailable):
            make_client(llama.base_url, max_retries=0).complete_decision(
                messages_for, business_id=1
            )


def test_invalid_output_gets_one_repair_with_the_error_shown(emu):
    emu.script(Step.not_json("Sure! The chair is 45 000."), Step.decision(reply="Fixed"))
    completion = make_client(emu.base_url).complete_decision(messages_for, business_id=1)
    assert completion.decision.reply_to_customer == "Fixed"
    assert completion.repaired
    assert not completion.first_valid
    repair = emu.chat_requests[1].messages
    assert repair[-2] == {"role": "assistant", "content": "Sure! The chair is 45 000."}
    assert "not valid JSON" in repair[-1]["content"]


def test_invalid_twice_is_a_model_output_error(emu):
    emu.script(Step.invalid_json(), Step.wrong_schema())
    with pytest.raises(ModelOutputError, match="action: Field required"):
        make_client(emu.base_url).complete_decision(messages_for, business_id=1)
    assert len(emu.chat_requests) == 2


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"action": "maybe", "reply_to_customer": "x"}', "action"),
        ('{"action": "answer", "reply_to_customer": ""}', "reply_to_customer is empty"),
        ("[1, 2]", "JSON object"),
        ("", "empty"),
    ],
)
def test_schema_validation_explains_what_is_wrong(content, problem):
    decision, error = parse_decision(content)
    assert decision is None
    assert problem in error


def test_fenced_json_is_accepted():
    decision, error = parse_decision("```json\n" + decision_json(reply="ok") + "\n```")
    assert error == ""
    assert decision.reply_to_customer == "ok"


def test_a_reading_parses_and_an_intent_outside_the_set_is_dropped_not_an_invalid_answer():
    reading = {
        "intents": ["complaint", "wants_discount"],
        "items": [{"sku": "CH-101", "qty": 2, "unit": "pcs"}, {"sku": "TB-201"}],
    }
    decision, error = parse_decision(decision_json(reply="{quote}", reading=reading))
    assert error == ""
    assert decision.reading.intents == ["complaint"]
    assert [(i.sku, i.qty) for i in decision.reading.items] == [("CH-101", 2), ("TB-201", None)]
    without, _ = parse_decision('{"action": "answer", "reply_to_customer": "ok"}')
    assert without.reading is None  # an answer from before the reading still validates


def test_5xx_timeout_and_dropped_connection_are_retried(emu):
    emu.script(Step.server_error(503), Step.decision(reply="after 503"))
    assert make_client(emu.base_url).complete_decision(messages_for, business_id=1)
    emu.script(Step.slow(2.0), Step.decision(reply="after timeout"))
    client = make_client(emu.base_url, timeout=0.5)
    assert client.complete_decision(messages_for, business_id=1).decision.reply_to_customer == (
        "after timeout"
    )
    emu.script(Step.dropped(), Step.decision(reply="after drop"))
    done = make_client(emu.base_url).complete_decision(messages_for, business_id=1)
    assert done.decision.reply_to_customer == "after drop"


def test_an_engine_failure_mid_stream_is_retried_not_repaired(emu):
    # vLLM has already answered 200 when the engine dies: the error comes as a stream event.
    emu.script(Step.failed_mid_stream(after_tokens=4), Step.decision(reply="after the restart"))
    done = make_client(emu.base_url).complete_decision(messages_for, business_id=1)
    assert done.decision.reply_to_customer == "after the restart"
    assert not done.repaired  # not taken for the model's own (invalid) answer
    assert len(emu.chat_requests) == 2
    emu.script(Step.failed_mid_stream(after_tokens=0))
    with pytest.raises(ModelUnavailable, match="engine core died"):
        make_client(emu.base_url, max_retries=0).complete_decision(messages_for, business_id=1)


def test_server_sent_events_as_servers_write_them():
    lines = [
        ": keep-alive",  # a comment
        'data: {"a": 1}',
        "",
        "event: message",
        'data:{"b":',  # no space after the colon, one event over two data lines
        "data: 2}",
        "",
        'error: {"code": 500, "message": "slot unavailable"}',  # llama.cpp's server
        "",
        "data: [DONE]",
    ]
    assert list(sse_events(lines)) == [
        ("", '{"a": 1}'),
        ("message", '{"b":\n2}'),
        ("error", '{"code": 500, "message": "slot unavailable"}'),
        ("", "[DONE]"),
    ]


def test_breaker_opens_after_n_failures_then_refuses_without_calling(emu):
    emu.script(*[Step.server_error(500)] * 10)
    guard = make_guard(failures=3)
    client = make_client(emu.base_url, guard=guard, max_retries=0)
    for _ in range(3):
        with pytest.raises(ModelUnavailable):
            client.complete_decision(messages_for, business_id=1)
    assert guard.state(emu.base_url) == "open"
    sent = len(emu.chat_requests)
    with pytest.raises(ModelUnavailable, match="open"):
        client.complete_decision(messages_for, business_id=1)
    assert len(emu.chat_requests) == sent  # nothing reached the server
    label = replica_label(emu.base_url)
    assert REGISTRY.get_sample_value("inbox_llm_breaker_state", {"replica": label}) == 2


def test_breaker_half_opens_after_cooldown_with_a_single_probe(emu):
    guard = make_guard(failures=2, cooldown_seconds=0.3)
    client = make_client(emu.base_url, guard=guard, max_retries=0)
    emu.script(Step.server_error(500), Step.server_error(500))
    for _ in range(2):
        with pytest.raises(ModelUnavailable):
            client.complete_decision(messages_for, business_id=1)
    assert guard.state(emu.base_url) == "open"
    sent = len(emu.chat_requests)

    def through():
        try:
            return client.complete_decision(messages_for, business_id=1)
        except ModelUnavailable:
            return None

    wait_for(through, timeout=5, interval=0.05, message="the probe after the cool-down")
    assert len(emu.chat_requests) == sent + 1  # only the probe reached the server
    assert guard.state(emu.base_url) == "closed"


def test_only_one_probe_and_a_failed_probe_reopens(emu):
    guard = make_guard(failures=1, cooldown_seconds=0.2)
    url = emu.base_url
    guard.failed(guard.allow(url))
    assert guard.allow(url) is None
    probe = wait_for(lambda: guard.allow(url), timeout=3, message="cool-down")
    assert probe.probe
    assert guard.state(url) == "half_open"
    assert guard.allow(url) is None  # a second caller waits for the probe's result
    assert guard.failed(probe) == "open"
    assert guard.allow(url) is None


def test_breaker_state_is_shared_by_processes(emu):
    """Another process (another worker) records the failures; this one sees the breaker open."""
    script = (
        "import redis, sys\n"
        "from assistant.llm.resilience import RedisGuard\n"
        "g = RedisGuard(redis.Redis.from_url(sys.argv[1]), failures=3, cooldown_seconds=60,"
        " max_in_flight=8, lease_seconds=10)\n"
        "for _ in range(3):\n"
        "    g.failed(g.allow(sys.argv[2]))\n"
        "print(g.state(sys.argv[2]))\n"
    )
    from django.conf import settings

    out = subprocess.run(
        [sys.executable, "-c", script, settings.REDIS_URL, emu.base_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.strip() == "open"
    client = make_client(emu.base_url, guard=make_guard(failures=3))
    with pytest.raises(ModelUnavailable):
        client.complete_decision(messages_for, business_id=1)
    assert emu.chat_requests == []


def test_admission_bounds_in_flight_requests_across_callers(emu):
    emu.responder = lambda request: Step(delay=0.8)
    guard = make_guard(max_in_flight=2)
    results: list[object] = []

    def call(wait: float) -> None:
        client = make_client(emu.base_url, guard=guard, admission_wait=wait)
        try:
            results.append(client.complete_decision(messages_for, business_id=1))
        except ModelUnavailable as exc:
            results.append(exc)

    threads = [threading.Thread(target=call, args=(0.0,)) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    refused = [r for r in results if isinstance(r, ModelUnavailable)]
    assert len(refused) == 3
    assert emu.stats.peak_running == 2

    results.clear()
    threads = [threading.Thread(target=call, args=(10.0,)) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not [r for r in results if isinstance(r, ModelUnavailable)]
    assert emu.stats.peak_running == 2
    assert guard.in_flight(emu.base_url) == 0


def test_a_dead_workers_lease_expires():
    """A worker killed mid-request never releases its slot; the lease frees it."""
    url = "http://gpu-1.invalid/v1"
    guard = make_guard(max_in_flight=1, lease_seconds=0.5)
    assert guard.acquire(url) is not None  # held by a "worker" that then dies
    assert guard.acquire(url) is None
    assert wait_for(lambda: guard.acquire(url), timeout=5, message="lease expiry")


def test_one_replica_down_does_not_stop_the_assistant(emu, second_emu):
    refused = make_client(refused_base_url(), emu.base_url, max_retries=2)
    for _ in range(6):
        assert refused.complete_decision(messages_for, business_id=1).replica == (
            replica_label(emu.base_url)
        )

    # A replica answering 503 (a broken vLLM): its breaker opens, then it is no longer tried.
    broken = second_emu
    broken.responder = lambda request: Step.server_error(503)
    guard = make_guard(failures=2)
    client = make_client(broken.base_url, emu.base_url, guard=guard, max_retries=2)
    for _ in range(40):
        completion = client.complete_decision(messages_for, business_id=1)
        assert completion.replica == replica_label(emu.base_url)
        if guard.state(broken.base_url) == "open":
            break
    assert guard.state(broken.base_url) == "open"
    assert guard.state(emu.base_url) == "closed"
    tried = len(broken.chat_requests)
    for _ in range(5):
        client.complete_decision(messages_for, business_id=1)
    assert len(broken.chat_requests) == tried


def test_replicas_share_load_by_least_in_flight(emu, second_emu):
    for server in (emu, second_emu):
        server.responder = lambda request: Step(delay=1.5)
    guard = make_guard()
    client = make_client(emu.base_url, second_emu.base_url, guard=guard)
    threads = [
        threading.Thread(
            target=client.complete_decision, args=(messages_for,), kwargs={"business_id": 1}
        )
        for _ in range(4)
    ]
    urls = (emu.base_url, second_emu.base_url)
    for started, t in enumerate(threads, 1):
        t.start()
        # Each request holds its slot before the next one picks a replica.
        wait_for(lambda n=started: sum(guard.in_flight(u) for u in urls) == n, timeout=5)
    for t in threads:
        t.join()
    assert len(emu.chat_requests) == 2
    assert len(second_emu.chat_requests) == 2


def test_fallback_to_the_secondary_endpoint(emu):
    client = make_client(refused_base_url(), secondary=(emu.base_url,))
    completion = client.complete_decision(messages_for, business_id=1)
    assert completion.endpoint == "secondary"
    fallbacks = REGISTRY.get_sample_value(
        "inbox_llm_fallbacks_total", {"from_endpoint": "primary", "to": "secondary"}
    )
    assert fallbacks >= 1


def test_everything_down_is_model_unavailable():
    client = make_client(refused_base_url(), secondary=(refused_base_url(),))
    with pytest.raises(ModelUnavailable, match=r"primary.*secondary"):
        client.complete_decision(messages_for, business_id=1)


def test_cache_salt_isolates_businesses_and_is_shared_by_chats_of_one(emu):
    client = make_client(emu.base_url)
    for business_id, chat_id in ((1, 10), (1, 11), (2, 20)):
        t = turn("office chair?", chat_id=chat_id, business_id=business_id)
        k = knowledge(business_id=business_id)
        client.complete_decision(
            lambda mode, t=t, k=k: build_messages(t, k, CONFIG, mode), business_id=business_id
        )
    salts = [r.cache_salt for r in emu.chat_requests]
    assert salts[0] == salts[1] != salts[2]
    assert all(salt and salt != "1" and len(salt) == 32 for salt in salts)
    # The emulator counts prefix-cache hits per salt: business 1's second chat reuses the
    # system prompt; business 2 with the same price list reuses nothing.
    system_blocks = len(emu.chat_requests[0].messages[0]["content"]) // 64
    assert emu.stats.prefix_hits >= system_blocks * 16
    assert emu.stats.prefix_hits < 2 * system_blocks * 16


def test_metrics_record_latency_tokens_and_outcomes(emu):
    label = replica_label(emu.base_url)
    before = (
        REGISTRY.get_sample_value(
            "inbox_llm_request_seconds_count",
            {"endpoint": "primary", "replica": label, "outcome": "ok"},
        )
        or 0
    )
    make_client(emu.base_url).complete_decision(messages_for, business_id=1)
    after = REGISTRY.get_sample_value(
        "inbox_llm_request_seconds_count",
        {"endpoint": "primary", "replica": label, "outcome": "ok"},
    )
    assert after == before + 1
    assert (
        REGISTRY.get_sample_value(
            "inbox_llm_ttft_seconds_count", {"endpoint": "primary", "replica": label}
        )
        >= 1
    )
    assert (
        REGISTRY.get_sample_value(
            "inbox_llm_tokens_total", {"endpoint": "primary", "direction": "in"}
        )
        > 0
    )


def test_echo_default_decision_is_valid_for_the_real_prompt(emu):
    completion = make_client(emu.base_url).complete_decision(messages_for, business_id=1)
    reply = completion.decision.reply_to_customer
    assert reply.startswith("Echo: ")
    assert reply == "Echo: how much is the office chair?"


def test_a_server_dripping_tokens_is_cut_at_the_request_timeout(emu):
    emu.script(Step.decision(reply="slow " * 40, token_delay=0.05), Step.decision(reply="fast"))
    client = make_client(emu.base_url, timeout=1.0)
    completion = client.complete_decision(messages_for, business_id=1)
    assert completion.decision.reply_to_customer == "fast"
    assert len(emu.chat_requests) == 2
