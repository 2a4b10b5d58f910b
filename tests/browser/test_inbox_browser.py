"""Two managers in two real browsers (the system Chromium, driven by Playwright) on a real stack:
daphne, the ingest consumer and a Celery worker as processes, WhatsApp played by the Graph API
emulator. Everything a manager sees arrives without a reload.

Screenshots of the main pages go to test-artifacts/ (gitignored)."""

from __future__ import annotations

from typing import Any

import pytest

from inbox.conversations.handoff import hand_off
from inbox.conversations.models import Chat, Message
from tests import factories
from tests.browser.support import (
    CUSTOMER,
    PHONE_NUMBER_ID,
    csp_violations,
    in_thread,
    logged_in,
    shot,
    watched,
)
from tests.emulators.graph_api import GraphApiEmulator, contact, envelope, text_message
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


def tone_ogg(seconds: float = 1.5) -> bytes:
    """A short OGG/Opus recording (what WhatsApp sends for a voice note), made with PyAV."""
    import io
    import math

    import av
    import numpy as np

    buffer = io.BytesIO()
    with av.open(buffer, "w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=48000)
        stream.layout = "mono"
        samples = np.sin(2 * math.pi * 440 * np.arange(int(48000 * seconds)) / 48000) * 0.3
        for start in range(0, len(samples), 960):
            chunk = samples[start : start + 960].astype("float32").reshape(1, -1)
            frame = av.AudioFrame.from_ndarray(chunk, format="flt", layout="mono")
            frame.sample_rate = 48000
            frame.pts = start
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return buffer.getvalue()


def voice_note(chat_id: int, audio: bytes) -> Message:
    """A transcribed voice note from the customer, kept as the pipeline keeps one."""
    from inbox.conversations import attachments
    from inbox.conversations.transports import MediaBlob

    chat = Chat.objects.select_related("channel").get(pk=chat_id)
    message = Message.objects.create(
        chat=chat, channel=chat.channel, direction="in", author="customer", kind="voice",
        media_ref="voice-1", transcript="Can you deliver on Saturday?", transcript_status="done",
        transcript_confidence=0.82, provider_message_id="wamid.voice-browser",
        transcript_segments=[{"start": 0, "end": 1.5, "text": "Can you deliver on Saturday?",
                              "words": [{"word": w, "probability": 0.9, "low": w == "Saturday?"}
                                        for w in ["Can", "you", "deliver", "on", "Saturday?"]]}],
    )  # fmt: skip
    attachments.keep(message, MediaBlob(audio, "audio/ogg", ""))  # pushes the message once
    return message


def test_two_managers_follow_one_chat_live(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    anna = logged_in(browser, stack, "anna")
    boris = logged_in(browser, stack, "boris")
    for page in (anna, boris):
        expect(page.locator("#live-status")).to_have_attribute("data-state", "live")

    # A customer writes on WhatsApp: both lists show the chat without a reload.
    status = graph.deliver(
        envelope(
            PHONE_NUMBER_ID,
            contacts=[contact(CUSTOMER, name="Aigerim")],
            messages=[text_message(CUSTOMER, "Do you deliver <script>window.__xss=1</script>?")],
        )
    )
    assert status == 200
    for page in (anna, boris):
        row = page.locator("#chat-list-items .chat-row", has_text="Aigerim")
        expect(row).to_contain_text("<script>window.__xss=1</script>")
        expect(row.locator("[data-owner-badge]")).to_have_text("Bot")
        assert page.evaluate("window.__xss") is None
    shot(anna, "inbox-list")

    chat = wait_for(lambda: Chat.objects.filter(customer_key=CUSTOMER).first())
    for page in (anna, boris):
        page.locator("#chat-list-items .chat-row", has_text="Aigerim").click()
        page.wait_for_url(f"{stack}/inbox/chat/{chat.pk}/")
        expect(page.locator("#live-status")).to_have_attribute("data-state", "live")
        expect(page.locator(f"#messages-{chat.pk}")).to_contain_text("Do you deliver")

    # The bot hands off (the real function the turn calls): the card and a notification.
    chat.refresh_from_db()
    asked = Message.objects.filter(chat=chat, direction="in").latest("pk")
    outcome = in_thread(
        hand_off,
        chat.pk,
        reason="outside_knowledge_base",
        summary="Wants two oak tables delivered to Almaty next week.",
        facts={"name": "Aigerim", "city": "Almaty", "items": [{"name": "Oak table", "qty": 2}]},
        message_to_customer="A manager will answer you shortly.",
        generated_at_version=chat.version,
        answered_up_to=asked.pk,
    )
    assert outcome.handed_off
    for page in (anna, boris):
        card = page.locator(f"#handoff-{chat.pk}")
        expect(card).to_contain_text("Outside the price list")
        expect(card).to_contain_text("Wants two oak tables delivered to Almaty next week.")
        expect(card).to_contain_text("Oak table")
        expect(page.locator("#toasts .toast")).to_contain_text("Aigerim")
        expect(page).to_have_title("(1) Aigerim · Inbox")
        expect(page.locator(f"#messages-{chat.pk}")).to_contain_text("A manager will answer")
    shot(boris, "chat-handoff")

    # Anna takes over and replies; Boris sees both at once.
    anna.click("[data-action=take-over]")
    expect(boris.locator(f"#chat-header-{chat.pk}")).to_have_attribute("data-owner", "human")
    expect(boris.locator(f"#chat-header-{chat.pk}")).to_contain_text("Assigned to Anna Manager")
    anna.fill("[data-composer=reply] textarea", "Yes, delivery to Almaty is 2 days.")
    anna.click("[data-action=send]")
    reply = boris.locator(f"#messages-{chat.pk} .msg.author-manager")
    expect(reply).to_contain_text("Yes, delivery to Almaty is 2 days.")
    expect(reply).to_contain_text("Anna Manager")
    wait_for(lambda: graph.sent_to(CUSTOMER) and "2 days" in graph.sent_to(CUSTOMER)[-1].text)
    expect(anna.locator(f"#messages-{chat.pk} .msg.author-manager [data-status]")).to_have_text(
        "Sent"
    )
    expect(anna.locator("[data-composer=reply] textarea")).to_have_value("")
    shot(anna, "chat-human")

    # Release returns the chat to the bot, in both browsers.
    anna.click("[data-action=release]")
    for page in (anna, boris):
        expect(page.locator(f"#chat-header-{chat.pk}")).to_have_attribute("data-owner", "bot")
        expect(page.locator(f"#chat-row-{chat.pk} [data-owner-badge]")).to_have_text("Bot")
    chat.refresh_from_db()
    assert chat.owner == "bot"

    # A voice note: the manager sees the transcript with the doubtful word marked and plays
    # the original recording from /inbox/media/<id>/ (range requests, permission-checked).
    voice = in_thread(voice_note, chat.pk, tone_ogg())
    player = f"#messages-{chat.pk} [data-message-id='{voice.pk}'] audio"
    expect(boris.locator(player)).to_be_attached()
    expect(boris.locator(f"#messages-{chat.pk} mark.low-confidence")).to_have_text("Saturday?")
    played = boris.evaluate(
        """async (selector) => {
            // A live push may replace the element while it starts playing: play the current one.
            for (let attempt = 0; ; attempt++) {
                const audio = document.querySelector(selector);
                audio.muted = true;
                try {
                    await audio.play();
                } catch (error) {
                    if (error.name === "AbortError" && attempt < 3) continue;
                    throw error;
                }
                if (audio.currentTime === 0) {
                    await new Promise((done) => audio.addEventListener("timeupdate", done, {once: true}));
                }
                return {time: audio.currentTime, duration: audio.duration, error: audio.error && audio.error.code};
            }
        }""",
        player,
    )
    assert played["error"] is None
    assert played["time"] > 0
    assert 1.0 < played["duration"] < 2.5
    shot(boris, "chat-voice-note")

    # The pages a business admin works with.
    anna.goto(f"{stack}/inbox/settings/channels/")
    expect(anna.locator("table")).to_contain_text("Main number")
    shot(anna, "settings-channels")
    anna.goto(f"{stack}/inbox/settings/channels/{people['channel'].pk}/")
    shot(anna, "settings-channel-edit")
    anna.goto(f"{stack}/inbox/review/")
    expect(anna.locator(".review-list")).to_contain_text("Wants two oak tables")
    shot(anna, "review")
    for path, name in [("price-list", "settings-price-list"), ("assistant", "settings-assistant"),
                       ("bitrix24", "settings-bitrix24")]:  # fmt: skip
        anna.goto(f"{stack}/inbox/settings/{path}/")
        expect(anna.locator("h1")).to_be_visible()
        shot(anna, name)
    login_page = watched(browser.new_context().new_page())
    login_page.goto(f"{stack}/accounts/login/")
    shot(login_page, "login")

    # The sandbox: htmx posts the customer's message and the form empties itself (a listener
    # in a static file: the policy allows no hx-on attribute, which htmx runs through eval).
    sandbox = in_thread(factories.channel, people["business"], name="Try it")
    anna.goto(f"{stack}/inbox/sandbox/{sandbox.pk}/")
    anna.fill("form[data-reset-after-request] input[name=text]", "Hello from the sandbox")
    anna.click("form[data-reset-after-request] button[type=submit]")
    expect(anna.locator("#conversation")).to_contain_text("Hello from the sandbox")
    expect(anna.locator("form[data-reset-after-request] input[name=text]")).to_have_value("")
    shot(anna, "sandbox")

    # Everything above ran under the site's Content-Security-Policy without a refusal: the
    # websocket, htmx, the audio player, every settings page.
    assert csp_violations == []


def test_show_more_appends_the_next_page_without_repeating_a_row(
    people: dict[str, Any], stack: str, browser: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from inbox.web.dashboard import LIST_LIMIT
    from inbox.web.live import dashboard_push

    now = timezone.now()
    chats = Chat.objects.bulk_create(
        Chat(
            channel=people["channel"],
            customer_key=f"7702{n:07d}",
            customer_name=f"Listed {n:03d}",
            last_message_at=now - timedelta(minutes=n),
        )
        for n in range(LIST_LIMIT + 3)
    )
    page = logged_in(browser, stack, "boris")
    rows = page.locator("#chat-list-items .chat-row")
    assert rows.count() == LIST_LIMIT
    wait_for(lambda: page.evaluate("window.inboxLive.connected"), timeout=20)

    # The last chat on the second page writes again: it moves to the top, live, so the second
    # page (counted from the database's new order) starts with a row the page already shows.
    last = chats[-1]

    def writes_again() -> bool:
        Chat.objects.filter(pk=last.pk).update(last_message_at=timezone.now())
        dashboard_push.chat_changed(last.pk)
        return True

    in_thread(writes_again)
    # Functions, not expression strings: Playwright evaluates a string predicate with eval,
    # which the site's Content-Security-Policy refuses.
    page.wait_for_function(
        "(id) => document.querySelector('#chat-list-items .chat-row').id === id",
        arg=f"chat-row-{last.pk}",
    )
    page.click("text=Show more chats")
    page.wait_for_function(
        "() => { const ids = [...document.querySelectorAll('#chat-list-items .chat-row')]"
        ".map(r => r.id); return ids.length > 201 && new Set(ids).size === ids.length; }"
    )

    ids = page.eval_on_selector_all("#chat-list-items .chat-row", "rows => rows.map(r => r.id)")
    assert len(ids) == len(set(ids)) == LIST_LIMIT + 3
    assert page.locator("text=Show more chats").count() == 0
    assert csp_violations == []
