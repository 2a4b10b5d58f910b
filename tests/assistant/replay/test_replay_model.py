"""Replay with another model endpoint, then Apply: the endpoint becomes that business's own.

Its own module because its worker runs with an installation model (LLM_BASE_URL = an OpenAI
emulator), where test_replay's worker runs the catalogue assistant."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.llm import business as business_llm
from assistant.llm import health
from assistant.llm import metrics as llm_metrics
from assistant.models import AssistantSettings, ReplayRun, ReplayTurn
from assistant.replay import engine
from assistant.replay.candidate import Candidate, CandidateModel
from assistant.turn import take_turn
from inbox.conversations import debounce
from inbox.conversations.models import Business, Chat, Membership, Turn
from tests import factories
from tests.assistant.replay.test_replay import PRICES, QUESTIONS, client_for, start_form, wait_done
from tests.emulators.openai_server import OpenAIEmulator, Step
from tests.processes import ProcessGroup, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

LIVE_REPLY = "Office chair Lux: 45 000 KZT"
CANDIDATE_KEY = "candidate-key-0123456789"


@pytest.fixture(scope="module")
def installation() -> Iterator[OpenAIEmulator]:
    """The installation's model server (LLM_BASE_URL of the worker and of this process)."""
    with OpenAIEmulator() as emulator:
        yield emulator


@pytest.fixture(scope="module")
def model_worker(
    subprocess_env: dict[str, str], installation: OpenAIEmulator
) -> Iterator[ProcessGroup]:
    group = ProcessGroup(subprocess_env)
    group.start_celery_worker(
        "replay-model-worker",
        env={"LLM_BASE_URL": installation.base_url, "LLM_MODEL": "assistant", "LLM_API_KEY": ""},
    )
    yield group
    group.stop_all()


@pytest.fixture(autouse=True)
def _live_model(settings: Any, installation: OpenAIEmulator) -> Iterator[None]:
    settings.LLM_BASE_URL = installation.base_url
    settings.LLM_MODEL = "assistant"
    settings.LLM_API_KEY = ""
    installation.responder = lambda request: Step.decision(reply=LIVE_REPLY)
    installation.api_key = None
    installation.requests.clear()
    yield
    installation.responder = None


def shop(name: str) -> tuple[Business, Any]:
    business = factories.business(name)
    channel = factories.channel(business)
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), business)
    return business, channel


def answered_chat(channel: Any, text: str) -> Chat:
    """A chat with one customer message answered in this process (the recorded history)."""
    chat = factories.chat(channel)
    factories.customer_message(chat, text)
    Chat.objects.filter(pk=chat.pk).update(version=1)
    take_turn(chat.pk)
    return chat


def customer_writes(channel: Any, text: str) -> Turn:
    """A new customer message, its turn run by the worker as ingest schedules it."""
    chat = factories.chat(channel)
    factories.customer_message(chat, text)
    Chat.objects.filter(pk=chat.pk).update(version=1)
    debounce.schedule(chat.pk, 0)

    def finished() -> Turn | None:
        return (
            Turn.objects.filter(chat=chat)
            .exclude(outcome=Turn.Outcome.RUNNING)
            .select_related("reply_message")
            .first()
        )

    return wait_for(finished, timeout=60, interval=0.1, message="the worker to answer")


def test_a_model_endpoint_is_replayed_then_applied_and_answers_only_that_business(
    model_worker: ProcessGroup, installation: OpenAIEmulator
) -> None:
    business, channel = shop("Model shop")
    other, other_channel = shop("Other shop")
    admin = factories.manager(business, role=Membership.Role.ADMIN)
    other_admin = factories.manager(other, role=Membership.Role.ADMIN)
    AssistantSettings.objects.create(business=business, replay_gate=True, replay_gate_threshold=0)
    chat = answered_chat(channel, QUESTIONS["chair"])
    live_calls = len(installation.chat_requests)
    with OpenAIEmulator(api_key=CANDIDATE_KEY) as candidate:
        candidate.responder = lambda request: Step.decision(reply="Office chair Lux: 39 000 KZT")
        web = client_for(admin)

        web.post("/inbox/settings/replay/", start_form(
            business, model_base_url=candidate.base_url, model_name="assistant",
            model_structured_output="json_schema", model_api_key=CANDIDATE_KEY))  # fmt: skip

        run = wait_done(ReplayRun.objects.get(business=business).pk)
        (row,) = run.turns.all()
        assert row.change == ReplayTurn.Change.BLOCKED
        assert row.then["amounts"][0]["ok"] is True
        assert row.now["amounts"] == [{"text": "39 000 KZT", "value": "39000.00", "ok": False}]
        assert row.now["backend"] == "llm:replay"
        assert len(candidate.chat_requests) == 1
        assert len(installation.chat_requests) == live_calls
        assert ReplayRun.objects.get(pk=run.pk).model_api_key == CANDIDATE_KEY
        page = web.get(f"/inbox/settings/replay/{run.pk}/").content.decode()
        assert CANDIDATE_KEY not in page
        assert 'data-action="apply-replay"' in page
        assert "this business's own model endpoint" in page
        assert Turn.objects.filter(chat=chat).count() == 1  # nothing sent by the replay

        # In this process too: a replayed turn is labelled `replay` in the LLM metrics.
        primary = llm_metrics.FALLBACKS.labels("primary", "handoff")._value.get()
        replayed = Candidate(model=CandidateModel(candidate.base_url, "assistant", api_key=CANDIDATE_KEY))  # fmt: skip
        engine.replay_turn(Turn.objects.get(chat=chat), replayed, replayed.client())
        samples = {
            s.labels["endpoint"]
            for metric in llm_metrics.REQUEST_SECONDS.collect()
            for s in metric.samples
        }
        assert "replay" in samples
        assert llm_metrics.FALLBACKS.labels("primary", "handoff")._value.get() == primary

        # The admin of another business cannot apply it; the gate asks for a confirmation.
        assert client_for(other_admin).post(f"/inbox/settings/replay/{run.pk}/apply/").status_code == 404  # fmt: skip
        refused = web.post(f"/inbox/settings/replay/{run.pk}/apply/", follow=True).content.decode()
        assert "Not applied" in refused
        assert AssistantSettings.objects.get(business=business).model_base_url == ""
        applied = web.post(f"/inbox/settings/replay/{run.pk}/apply/", {"confirm": "1"},
                           follow=True).content.decode()  # fmt: skip
        assert f"Applied model assistant at {candidate.base_url}" in applied
        config = AssistantSettings.objects.get(business=business)
        assert (config.model_base_url, config.model_api_key) == (candidate.base_url, CANDIDATE_KEY)
        assert not AssistantSettings.objects.filter(business=other).exclude(model_base_url="")

        # A real customer message of this business: answered by the applied endpoint only.
        candidate.responder = lambda request: Step.decision(reply="Candidate: 45 000 KZT")
        before_live, before_candidate = (
            len(installation.chat_requests),
            len(candidate.chat_requests),
        )
        turn = customer_writes(channel, QUESTIONS["chair"])
        assert turn.outcome == Turn.Outcome.ANSWERED, turn.model_error
        assert turn.backend == "llm:business"
        assert turn.reply_message is not None
        assert turn.reply_message.text == "Candidate: 45 000 KZT"
        assert len(candidate.chat_requests) == before_candidate + 1
        assert candidate.chat_requests[-1].headers.get("authorization") == f"Bearer {CANDIDATE_KEY}"
        assert len(installation.chat_requests) == before_live

        # Another business still gets the installation's model.
        turn = customer_writes(other_channel, QUESTIONS["chair"])
        assert turn.outcome == Turn.Outcome.ANSWERED, turn.model_error
        assert turn.backend == "llm:primary"
        assert turn.reply_message is not None
        assert turn.reply_message.text == LIVE_REPLY
        assert len(installation.chat_requests) == before_live + 1
        assert len(candidate.chat_requests) == before_candidate + 1


def test_a_broken_endpoint_of_one_business_never_opens_the_breaker_of_another(
    installation: OpenAIEmulator, settings: Any
) -> None:
    """Same server for all three, A with a key it refuses: A's breaker opens, B (its own, right
    key) and C (the installation's) are answered, and their breakers stay closed."""
    installation.api_key = "good-key"
    settings.LLM_API_KEY = "good-key"
    a, channel_a = shop("A")
    b, channel_b = shop("B")
    _c, channel_c = shop("C")
    AssistantSettings.objects.create(
        business=a, model_base_url=installation.base_url, model_api_key="wrong-key"
    )
    AssistantSettings.objects.create(
        business=b, model_base_url=installation.base_url, model_api_key="good-key"
    )

    first_a = Turn.objects.get(chat=answered_chat(channel_a, QUESTIONS["chair"]))
    calls = len(installation.chat_requests)
    second_a = Turn.objects.get(chat=answered_chat(channel_a, QUESTIONS["chair"]))
    turn_b = Turn.objects.get(chat=answered_chat(channel_b, QUESTIONS["chair"]))
    turn_c = Turn.objects.get(chat=answered_chat(channel_c, QUESTIONS["chair"]))

    assert (first_a.outcome, first_a.reason) == (Turn.Outcome.HANDED_OFF, "model_misconfigured")
    assert "401" in first_a.model_error
    assert second_a.reason == "model_misconfigured"
    assert len(installation.chat_requests) == calls + 2  # A's open breaker: no call; B; C
    assert (turn_b.outcome, turn_b.backend) == (Turn.Outcome.ANSWERED, "llm:business")
    assert (turn_c.outcome, turn_c.backend) == (Turn.Outcome.ANSWERED, "llm:primary")
    url = installation.base_url
    config_a = AssistantSettings.objects.get(business=a)
    client_a = business_llm.client_for(config_a)
    client_b = business_llm.client_for(AssistantSettings.objects.get(business=b))
    assert client_a is not None
    assert client_b is not None
    assert client_a.guard.state(url) == "open"
    assert client_b.guard.state(url) == "closed"
    assert set(health.breaker_states().values()) == {"closed"}  # /readyz: the installation's

    # A saved URL is checked again when used: refused now, the chat goes to a person, no call.
    settings.OUTBOUND_ALLOWED_HOSTS = []
    calls = len(installation.chat_requests)
    refused = Turn.objects.get(chat=answered_chat(channel_b, QUESTIONS["chair"]))
    assert (refused.outcome, refused.reason) == (Turn.Outcome.HANDED_OFF, "model_misconfigured")
    assert "not allowed" in refused.model_error
    assert len(installation.chat_requests) == calls


def settings_form(business: Business, **model: str) -> dict[str, str]:
    config = AssistantSettings.objects.get_or_create(business=business)[0]
    return {
        "business_rules": config.business_rules,
        "reasons_text": "\n".join(f"{r['code']}: {r['description']}" for r in config.reasons()),
        "promises_text": "\n".join(config.promises()),
        "replay_gate_threshold": "0.05",
        "model-model_structured_output": "json_schema",
        **{f"model-{k}": v for k, v in model.items()},
    }


def test_the_assistant_settings_page_edits_the_endpoint_refuses_egress_and_never_shows_the_key(
    settings: Any,
) -> None:
    business, _channel = shop("Keys")
    other, _ = shop("Other keys")
    admin = factories.manager(business, role=Membership.Role.ADMIN)
    other_admin = factories.manager(other, role=Membership.Role.ADMIN)
    web = client_for(admin)
    url = f"/inbox/settings/assistant/?business={business.pk}"
    key = "sk-secret-key-987654"

    settings.OUTBOUND_ALLOWED_HOSTS = []
    page = web.post(url, settings_form(business, model_base_url="http://127.0.0.1:9/v1",
                                       model_name="m", model_api_key=key)).content.decode()  # fmt: skip
    assert "not allowed" in page.lower() or "address" in page.lower()
    assert AssistantSettings.objects.get(business=business).model_base_url == ""
    assert key not in page

    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    web.post(url, settings_form(business, model_base_url="http://127.0.0.1:9/v1",
                                model_name="m", model_api_key=key))  # fmt: skip
    config = AssistantSettings.objects.get(business=business)
    assert (config.model_base_url, config.model_name, config.model_api_key) == (
        "http://127.0.0.1:9/v1", "m", key)  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT model_api_key FROM assistant_assistantsettings WHERE id = %s", [config.pk]
        )
        assert key not in cursor.fetchone()[0]  # stored encrypted
    page = web.get(url).content.decode()
    assert "http://127.0.0.1:9/v1" in page
    assert key not in page
    assert key[-4:] not in page
    assert "Set. Leave empty to keep it." in page

    web.post(url, settings_form(business, model_base_url="http://127.0.0.1:9/v1", model_name="m"))
    assert AssistantSettings.objects.get(business=business).model_api_key == key  # kept
    web.post(url, settings_form(business, model_base_url="", model_name="",
                                model_api_key_clear="on"))  # fmt: skip
    config = AssistantSettings.objects.get(business=business)
    assert (config.model_base_url, config.model_api_key) == ("", "")

    # Another business's admin cannot edit it: the query names a business not theirs, a 404,
    # and neither business changes.
    foreign = settings_form(other, model_base_url="http://127.0.0.1:9/x")
    assert client_for(other_admin).post(url, foreign).status_code == 404
    assert AssistantSettings.objects.get(business=business).model_base_url == ""
    assert AssistantSettings.objects.get(business=other).model_base_url == ""
