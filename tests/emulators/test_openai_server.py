"""The OpenAI-compatible emulator speaks the wire format the real `openai` client expects."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.emulators.openai_server import (
    OpenAIEmulator,
    Step,
    decision_json,
    refused_base_url,
    render_prompt,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["answer", "handoff"]},
        "reply_to_customer": {"type": "string"},
    },
    "required": ["action", "reply_to_customer"],
}


@pytest.fixture
def emu():
    with OpenAIEmulator() as server:
        yield server


def client(emu: OpenAIEmulator) -> openai.OpenAI:
    return openai.OpenAI(base_url=emu.base_url, api_key="k", max_retries=0, timeout=5)


def test_echo_decision_non_streaming(emu):
    out = client(emu).chat.completions.create(
        model="assistant", messages=[{"role": "user", "content": "How much is the oak table?"}]
    )
    decision = json.loads(out.choices[0].message.content)
    assert decision["action"] == "answer"
    assert decision["reply_to_customer"] == "Echo: How much is the oak table?"
    assert out.usage.prompt_tokens > 0


def test_streaming_sends_chunks_usage_and_done(emu):
    emu.script(Step.reply(decision_json(reply="two chairs cost 90 000 KZT")))
    stream = client(emu).chat.completions.create(
        model="assistant",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert json.loads(text)["reply_to_customer"] == "two chairs cost 90 000 KZT"
    assert len([c for c in chunks if c.choices]) > 5
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 5


def test_json_schema_is_honoured_and_script_errors_surface(emu):
    rf = {"type": "json_schema", "json_schema": {"name": "d", "schema": SCHEMA}}
    emu.script(Step.reply(json.dumps({"action": "maybe", "reply_to_customer": "x"})))
    with pytest.raises(openai.InternalServerError, match="script error"):
        client(emu).chat.completions.create(
            model="assistant", messages=[{"role": "user", "content": "hi"}], response_format=rf
        )
    assert len(emu.script_errors) == 1
    assert "maybe" in emu.script_errors[0]
    assert emu.requests[-1].response_format == rf


def test_failure_modes(emu):
    emu.script(Step.server_error(503), Step.invalid_json(), Step.invented_price("15 000 KZT"))
    c = client(emu)
    msgs = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.InternalServerError):
        c.chat.completions.create(model="assistant", messages=msgs)
    cut = c.chat.completions.create(model="assistant", messages=msgs)
    assert cut.choices[0].finish_reason == "length"
    with pytest.raises(ValueError):
        json.loads(cut.choices[0].message.content)
    invented = c.chat.completions.create(model="assistant", messages=msgs)
    assert "15 000 KZT" in invented.choices[0].message.content
    with pytest.raises(openai.NotFoundError):
        c.chat.completions.create(model="other", messages=msgs)


def test_llama_cpp_mode_rejects_json_schema():
    with OpenAIEmulator(reject_json_schema=True) as emu:
        rf = {"type": "json_schema", "json_schema": {"name": "d", "schema": SCHEMA}}
        with pytest.raises(openai.InternalServerError):
            client(emu).chat.completions.create(
                model="assistant", messages=[{"role": "user", "content": "x"}], response_format=rf
            )


def test_stopped_server_refuses_connections_and_restarts_on_the_same_port():
    emu = OpenAIEmulator().start()
    url = emu.base_url
    emu.stop()
    c = openai.OpenAI(base_url=url, api_key="k", max_retries=0, timeout=2)
    with pytest.raises(openai.APIConnectionError):
        c.models.list()
    emu.start()
    try:
        assert emu.base_url == url
        assert [m.id for m in c.models.list()] == ["assistant"]
    finally:
        emu.stop()
    with pytest.raises(openai.APIConnectionError):
        openai.OpenAI(base_url=refused_base_url(), api_key="k", max_retries=0).models.list()


def test_metrics_count_prefix_hits_per_cache_salt(emu):
    shared = "You are the assistant of the furniture shop. Price list: " + "oak table 120000; " * 40
    c = client(emu)
    for salt, chat in (("biz-a", "chat 1"), ("biz-a", "chat 2"), ("biz-b", "chat 3")):
        c.chat.completions.create(
            model="assistant",
            messages=[{"role": "system", "content": shared}, {"role": "user", "content": chat}],
            extra_body={"cache_salt": salt},
        )
    assert [r.cache_salt for r in emu.chat_requests] == ["biz-a", "biz-a", "biz-b"]
    metrics = httpx.get(emu.metrics_url).text
    values = {
        line.split("{")[0]: float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("vllm:") and "_bucket" not in line
    }
    # Only the second request (same salt as the first) reuses the shared system prompt's blocks.
    first, second = (render_prompt(r.messages) for r in emu.chat_requests[:2])
    common = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    prefix_blocks = common // 64
    assert prefix_blocks > 10
    assert values["vllm:prefix_cache_hits_total"] == prefix_blocks * 16
    assert values["vllm:prefix_cache_queries_total"] > 3 * prefix_blocks * 16
    assert values["vllm:num_requests_waiting"] == 0
    assert values["vllm:time_to_first_token_seconds_count"] == 3
