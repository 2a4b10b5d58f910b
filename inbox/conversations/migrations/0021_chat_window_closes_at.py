"""Chat.window_closes_at: when a Cloud API chat's customer-service window closes
(inbox/conversations/window.py). Existing Cloud API chats get 24 h from their last customer
message, so no open conversation is locked by the deploy."""

from datetime import timedelta

from django.db import migrations, models
from django.db.models import F


def backfill(apps, schema_editor):
    Chat = apps.get_model("inbox", "Chat")
    Chat.objects.filter(channel__kind="cloud_api", last_customer_at__isnull=False).update(
        window_closes_at=F("last_customer_at") + timedelta(hours=24)
    )


class Migration(migrations.Migration):

    dependencies = [
        ("inbox", "0020_chat_undeliverable"),
    ]

    operations = [
        migrations.AddField(
            model_name="chat",
            name="window_closes_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
