"""Fault 1: a Celery worker killed (SIGKILL) in the middle of a turn.

The turn task is acknowledged late and rejected on worker loss, so its message stays in Redis
(kombu's unacked set) and is handed to another worker after the broker's visibility timeout.
This test runs the worker with CELERY_VISIBILITY_TIMEOUT=10 to see that happen in seconds;
production keeps 300 because a task still *running* longer than the timeout (a slow model, a
long transcription) would also be handed out again, a second time, while the first runs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from inbox.conversations.models import Chat, Message, Turn
from inbox.platform.redis import get_redis
from tests.emulators.graph_api import GraphApiEmulator
from tests.emulators.openai_server import OpenAIEmulator, Step
from tests.faults.helpers import (
    Stack,
    celery_idle,
    cloud_channel,
    customer,
    finished_turns,
    message_body,
    stack_env,
)
from tests.processes import ProcessGroup, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(150)]


@pytest.fixture
def graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator(app_secret="kill-secret") as emulator:
        yield emulator


@pytest.fixture
def llm() -> Iterator[OpenAIEmulator]:
    with OpenAIEmulator() as emulator:
        yield emulator


def test_turn_survives_its_worker_being_killed_and_replies_exactly_once(
    subprocess_env: dict[str, str], graph: GraphApiEmulator, llm: OpenAIEmulator
) -> None:
    started = time.monotonic()
    env = stack_env(subprocess_env, graph, llm.base_url, CELERY_VISIBILITY_TIMEOUT="10",
                    LLM_TIMEOUT_SECONDS="60")  # fmt: skip
    group = ProcessGroup(env)
    try:
        stack = Stack(group, "kill").start(workers=0)
        group.start_celery_worker("kill-worker-a", concurrency=1)
        graph.webhook_url = f"{stack.web[0]}/webhooks/whatsapp/"
        channel, pnid = cloud_channel(graph)
        wa_id = customer(1)
        llm.script(Step.slow(25.0))  # the model takes long: the worker dies while waiting

        assert graph.deliver(message_body(pnid, wa_id, "Do you have the oak table?")) == 200
        wait_for(lambda: llm.chat_requests, timeout=30, message="the model call to start")
        chat = Chat.objects.get(channel=channel)
        assert Turn.objects.filter(chat=chat, outcome=Turn.Outcome.RUNNING).exists()

        group.kill("kill-worker-a")  # SIGKILL to the worker and its pool children
        assert graph.sent_to(wa_id) == []
        group.start_celery_worker("kill-worker-b", concurrency=1)

        (reply,) = wait_for(lambda: graph.sent_to(wa_id), timeout=60, message="the reply")
        assert "oak table" in reply.text  # the echo model answered the customer's question
        (turn,) = wait_for(lambda: finished_turns(chat.pk), timeout=20)
        assert turn.outcome == Turn.Outcome.ANSWERED
        # Nothing is left to run that could send a second reply.
        wait_for(lambda: celery_idle(get_redis()), timeout=30, message="celery to be idle")
        assert len(graph.sent_to(wa_id)) == 1
        assert Message.objects.filter(chat=chat, author="bot").count() == 1
        assert len(llm.chat_requests) == 2  # the killed attempt and the one that answered
    finally:
        group.stop_all()
    print(f"\n[fault 1] worker killed mid-turn: {time.monotonic() - started:.1f} s")
