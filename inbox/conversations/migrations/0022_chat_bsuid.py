"""The customer's business-scoped user id and WhatsApp username on the chat, and room for a
BSUID in the customer keys; chats already keyed by a BSUID (`CC.…`, the Cloud API's key when
wa_id is empty) get it filled in."""

from typing import Any

from django.db import migrations, models


def _backfill(apps: Any, schema_editor: Any) -> None:
    Chat = apps.get_model("inbox", "Chat")
    Chat.objects.filter(
        channel__kind="cloud_api", customer_key__regex=r"^[A-Z]{2}\.[A-Za-z0-9.]+$"
    ).update(customer_bsuid=models.F("customer_key"))


class Migration(migrations.Migration):
    dependencies = [
        ("inbox", "0021_chat_window_closes_at"),
    ]

    operations = [
        # A BSUID (`CC.` + up to 128 characters) is longer than the 128 the key had.
        migrations.AlterField(
            model_name="chat",
            name="customer_key",
            field=models.CharField(
                help_text="wa_id, or the business-scoped user id when wa_id is empty.",
                max_length=160,
            ),
        ),
        migrations.AlterField(
            model_name="optout",
            name="customer_key",
            field=models.CharField(max_length=160),
        ),
        migrations.AddField(
            model_name="chat",
            name="customer_bsuid",
            field=models.CharField(blank=True, max_length=160),
        ),
        migrations.AddField(
            model_name="chat",
            name="customer_username",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddIndex(
            model_name="chat",
            index=models.Index(fields=["channel", "customer_bsuid"], name="chat_bsuid"),
        ),
        migrations.RunPython(_backfill, migrations.RunPython.noop),
    ]
