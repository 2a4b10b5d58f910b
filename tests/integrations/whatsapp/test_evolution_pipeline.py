"""A number connected through Evolution API, end to end with real processes: the Evolution
emulator posts its webhook bodies to the webhook server, the ingest consumer stores them, a
Celery worker runs the turn (the offline catalogue assistant answers from a price list) and
sends through the emulator's sendText, and the emulator reports the send as Evolution does.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import pytest

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from inbox.conversations.models import Alert, Channel, Chat, Message, Owner, Turn
from tests import factories
from tests.emulators.evolution import EvolutionEmulator
from tests.emulators.openai_audio import SpeechEmulator, Step, verbose_body
from tests.processes import ProcessGroup, ingest_drained, wait_for
from tests.speech_samples import encode, tone

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

TOKEN = "4A1E2F0B7C3D4E5F8091A2B3C4D5E6F7"
PRICE_LIST = (
    b"SKU,Name,Price,Currency,Availability\n"
    b"TB-201,Oak dining table,120000,KZT,in stock\n"
    b"SF-301,Blue sofa,310000,KZT,in stock\n"
)
QUESTION = "How much is the oak dining table?"
_customers = iter(range(77015550000, 77015559999))


@pytest.fixture(scope="module")
def speech() -> Iterator[SpeechEmulator]:
    with SpeechEmulator() as emulator:
        yield emulator


@pytest.fixture(scope="module")
def stack(subprocess_env: dict[str, str], speech: SpeechEmulator) -> Iterator[str]:
    env = {
        **subprocess_env,
        "LLM_BASE_URL": "",  # the offline catalogue assistant answers
        "SPEECH_BACKEND": "openai",
        "SPEECH_BASE_URL": speech.base_url,
    }
    group = ProcessGroup(env)
    hooks = group.start_webhook_server("evolution-webhooks")
    group.start("evolution-ingest", [sys.executable, "manage.py", "ingest_worker"])
    group.start_celery_worker("evolution-worker")
    yield hooks
    group.stop_all()


@pytest.fixture
def evolution(stack: str) -> Iterator[EvolutionEmulator]:
    with EvolutionEmulator(token=TOKEN) as emulator:
        channel = factories.channel(
            kind=Channel.Kind.EVOLUTION, bridge_url=emulator.base_url, bridge_token=TOKEN,
            gateway_instance=emulator.instance, debounce_seconds=0.3, language="en",
        )  # fmt: skip
        apply_price_list(parse_price_file(PRICE_LIST, "prices.csv"), channel.business)
        emulator.inbox_url = f"{stack}/webhooks/evolution/{channel.pk}/"
        emulator.channel = channel  # type: ignore[attr-defined]
        yield emulator


def _jid() -> str:
    return f"{next(_customers)}@s.whatsapp.net"


def _chat(jid: str) -> Chat:
    return wait_for(lambda: Chat.objects.filter(customer_key=jid).first(), message="the chat")


def _turns(chat: Chat) -> list[Turn]:
    return list(Turn.objects.filter(chat=chat).exclude(outcome=Turn.Outcome.RUNNING))


def test_customer_is_answered_our_report_is_no_takeover_and_the_phone_takes_over(
    evolution: EvolutionEmulator,
) -> None:
    jid = _jid()
    question = evolution.message(jid, QUESTION)
    for _ in range(3):  # Evolution's webhook retries: one message, one answer
        assert evolution.post("messages.upsert", question) == 200

    (reply,) = wait_for(lambda: evolution.sent_to(jid), message="the reply")
    assert "120" in reply.text
    chat = _chat(jid)
    wait_for(lambda: Message.objects.filter(chat=chat, provider_message_id=reply.id,
                                            status="sent").exists(), message="sent")  # fmt: skip
    # The send.message report came in before the answer: not a takeover.
    wait_for(ingest_drained, message="the report to be processed")
    chat.refresh_from_db()
    assert chat.owner == Owner.BOT
    assert Message.objects.filter(chat=chat, direction="in").count() == 1
    assert not Message.objects.filter(chat=chat, author="phone").exists()

    assert evolution.status(reply.id, jid, "READ") == 200
    wait_for(lambda: Message.objects.get(provider_message_id=reply.id).status == "read",
             message="the read status")  # fmt: skip

    typed = evolution.message(jid, "I'll call you in 5 minutes", from_me=True)
    assert evolution.post("messages.upsert", typed) == 200
    wait_for(lambda: Chat.objects.get(pk=chat.pk).owner == Owner.HUMAN, message="the takeover")
    evolution.customer_says(jid, "Thanks, waiting")
    wait_for(ingest_drained, message="the last message")
    assert len(evolution.sent_to(jid)) == 1  # the bot stays silent on a chat a manager owns


def test_voice_note_is_fetched_from_the_gateway_and_transcribed(
    evolution: EvolutionEmulator, speech: SpeechEmulator
) -> None:
    jid = _jid()
    speech.script(Step.verbose(verbose_body(QUESTION)))

    assert (
        evolution.post("messages.upsert", evolution.voice(jid, encode(tone(1.0), "ogg_opus")))
        == 200
    )

    voice = wait_for(lambda: Message.objects.filter(chat__customer_key=jid, kind="voice",
                                                    transcript_status="done").first(),
                     timeout=90, message="the transcript")  # fmt: skip
    assert voice.transcript == QUESTION
    (reply,) = wait_for(lambda: evolution.sent_to(jid), message="the reply to the voice note")
    assert "120" in reply.text


def test_history_replayed_after_a_reconnect_is_stored_once_and_never_answered(
    evolution: EvolutionEmulator,
) -> None:
    jid = _jid()
    old = int(time.time()) - 3 * 86400
    # Old chatter both ways: what the manager typed back then is no takeover now.
    history = [evolution.message(jid, f"old message {i}", timestamp=old + i, from_me=i % 10 == 9)
               for i in range(200)]  # fmt: skip

    assert evolution.post("messages.set", history) == 200
    assert evolution.post("messages.set", history[:100]) == 200  # replayed again
    for data in history[150:]:  # and some as upserts of old messages
        assert evolution.post("messages.upsert", data) == 200

    chat = _chat(jid)
    wait_for(lambda: Message.objects.filter(chat=chat).count() == 200, message="200 stored")
    wait_for(ingest_drained, message="the replay to be processed")
    assert not _turns(chat)
    assert evolution.sent_to(jid) == []
    assert Chat.objects.get(pk=chat.pk).owner == Owner.BOT
    # A new message afterwards is answered, on its own.
    evolution.customer_says(jid, QUESTION)
    (reply,) = wait_for(lambda: evolution.sent_to(jid), message="the reply to the new message")
    assert "120" in reply.text


def test_phone_offline_mid_conversation_alerts_at_once_and_the_reply_waits_for_the_link(
    evolution: EvolutionEmulator,
) -> None:
    jid = _jid()
    channel = evolution.channel  # type: ignore[attr-defined]
    assert evolution.connection("close", 428) == 200
    alert = Alert.objects.get(subject=f"channel:{channel.pk}", resolved_at__isnull=True)
    assert alert.kind == Alert.Kind.CHANNEL_SILENT

    evolution.relink_after_refusals = 1  # the phone is back after the first refused send

    evolution.customer_says(jid, QUESTION)  # arrived just before the link dropped

    (reply,) = wait_for(lambda: evolution.sent_to(jid), message="the reply once linked again")
    assert "120" in reply.text
    assert evolution.refused == 1
    wait_for(lambda: not Alert.objects.filter(pk=alert.pk, resolved_at__isnull=True).exists(),
             message="the alert resolved")  # fmt: skip


def test_gateway_down_while_replying_is_retried_then_shown_as_failed(
    evolution: EvolutionEmulator,
) -> None:
    jid = _jid()
    evolution.fail_sends_with = 503

    evolution.customer_says(jid, QUESTION)

    chat = _chat(jid)
    failed = wait_for(lambda: Message.objects.filter(chat=chat, direction="out",
                                                     status="failed").first(),
                      timeout=90, message="the reply to be failed")  # fmt: skip
    assert evolution.send_attempts == 3
    assert failed.sent_by_bot
