"""Management commands operators and scripts use."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from inbox.conversations.models import Business, Channel

pytestmark = pytest.mark.django_db


def _run(*args: str) -> str:
    out = io.StringIO()
    call_command("create_channel", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip()


def test_create_channel_creates_the_business_and_prints_the_channel_id() -> None:
    printed = _run("--business", "Astana Furniture", "--kind", "cloud_api", "--phone-number-id", "106540352242922",
                   "--access-token", "EAAJB-secret", "--debounce-seconds", "3", "--language", "ru")  # fmt: skip

    channel = Channel.objects.get(pk=int(printed))
    assert channel.business == Business.objects.get(name="Astana Furniture")
    assert (channel.kind, channel.phone_number_id, channel.debounce_seconds, channel.language) == (
        "cloud_api",
        "106540352242922",
        3.0,
        "ru",
    )
    assert channel.access_token == "EAAJB-secret"
    assert channel.read_receipts
    assert channel.typing_indicator


def test_create_channel_can_turn_read_receipts_and_typing_off() -> None:
    printed = _run("--business", "Quiet Shop", "--kind", "cloud_api", "--phone-number-id", "106540352242923",
                   "--access-token", "t", "--no-read-receipts", "--no-typing-indicator")  # fmt: skip

    channel = Channel.objects.get(pk=int(printed))
    assert (channel.read_receipts, channel.typing_indicator) == (False, False)


def test_the_token_is_stored_encrypted() -> None:
    from django.db import connection

    channel_id = int(
        _run(
            "--business",
            "B",
            "--kind",
            "bridge",
            "--bridge-url",
            "http://bridge:8080",
            "--bridge-token",
            "plain-bridge-secret",
        )
    )

    with connection.cursor() as cursor:
        cursor.execute("SELECT bridge_token FROM inbox_channel WHERE id = %s", [channel_id])
        stored = cursor.fetchone()[0]
    assert "plain-bridge-secret" not in stored
    assert Channel.objects.get(pk=channel_id).bridge_token == "plain-bridge-secret"


def test_an_existing_business_gets_another_channel() -> None:
    Business.objects.create(name="Shop")

    _run("--business", "Shop", "--kind", "sandbox")

    assert Business.objects.count() == 1
    assert Channel.objects.get().kind == "sandbox"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--kind", "cloud_api"], "needs --phone-number-id and --access-token"),
        (["--kind", "bridge", "--bridge-url", "http://x"], "needs --bridge-url and --bridge-token"),
        (["--kind", "sandbox", "--debounce-seconds", "-1"], "debounce"),
    ],
)
def test_incomplete_options_are_refused_with_a_clear_error(args: list[str], error: str) -> None:
    with pytest.raises(CommandError, match=error):
        _run("--business", "Shop", *args)
    assert not Channel.objects.exists()


def test_a_bridge_url_on_a_private_address_is_refused_unless_the_operator_allowed_it(
    settings: Any,
) -> None:
    args = ["--business", "Shop", "--kind", "bridge", "--bridge-token", "t", "--bridge-url"]
    for url in ("http://169.254.169.254/latest", "http://10.0.0.7:8080"):
        with pytest.raises(CommandError, match="OUTBOUND_ALLOWED_HOSTS"):
            call_command("create_channel", *args, url, stdout=io.StringIO())
    assert not Channel.objects.exists()

    settings.OUTBOUND_ALLOWED_HOSTS = ["10.0.0.0/24"]
    call_command("create_channel", *args, "http://10.0.0.7:8080", stdout=io.StringIO())
    assert Channel.objects.get().bridge_url == "http://10.0.0.7:8080"


def test_a_gateway_channel_names_its_instance_or_session() -> None:
    evolution = _run("--business", "Shop", "--kind", "evolution", "--bridge-url", "https://evo.example.com",
                     "--bridge-token", "evo-key", "--instance", "shop-main")  # fmt: skip
    waha = _run("--business", "Shop", "--kind", "waha", "--bridge-url", "https://waha.example.com",
                "--bridge-token", "waha-key", "--session", "default")  # fmt: skip

    assert Channel.objects.get(pk=int(evolution)).gateway_instance == "shop-main"
    assert Channel.objects.get(pk=int(waha)).gateway_instance == "default"
    with pytest.raises(CommandError, match="--session"):
        _run("--business", "Shop", "--kind", "waha", "--bridge-url", "https://waha.example.com",
             "--bridge-token", "k")  # fmt: skip


def test_a_phone_number_id_can_belong_to_one_channel_only() -> None:
    _run("--business", "A", "--kind", "cloud_api", "--phone-number-id", "1", "--access-token", "t")

    with pytest.raises(CommandError, match="exists"):
        _run(
            "--business",
            "B",
            "--kind",
            "cloud_api",
            "--phone-number-id",
            "1",
            "--access-token",
            "t",
        )


def test_help_documents_every_option() -> None:
    from inbox.conversations.management.commands.create_channel import Command

    text = Command().create_parser("manage.py", "create_channel").format_help()
    for option in (
        "--phone-number-id",
        "--access-token",
        "--bridge-url",
        "--bridge-token",
        "--debounce-seconds",
    ):
        assert option in text
