"""Attachments kept in an S3-compatible bucket (moto's S3 server over real HTTP) instead of
MEDIA_ROOT, and served to the business's managers only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from inbox.conversations import attachments
from inbox.conversations.transports import MediaBlob
from inbox.site.embedded_redis import free_port
from tests import factories

pytestmark = pytest.mark.django_db

BUCKET = "inbox-media"


@pytest.fixture
def s3(settings: Any) -> Iterator[Any]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    credentials = {
        "aws_access_key_id": "test-key",
        "aws_secret_access_key": "test-secret",
        "region_name": "us-east-1",
    }
    client = boto3.client("s3", endpoint_url=endpoint, **credentials)
    client.create_bucket(Bucket=BUCKET)
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {"bucket_name": BUCKET, "endpoint_url": endpoint, "region_name": "us-east-1",
                        "access_key": "test-key", "secret_key": "test-secret", "location": "media",
                        "default_acl": "private", "file_overwrite": False},
        },
    }  # fmt: skip
    yield client
    server.stop()


def test_an_attachment_is_kept_in_the_bucket_and_served_through_the_permission_check(
    s3: Any, client: Any
) -> None:
    chat = factories.chat()
    message = factories.customer_message(
        chat, "", kind="document", media_ref="555", media_filename="invoice.pdf"
    )
    pdf = b"%PDF-1.4 invoice for 2 oak chairs"

    attachments.keep(message, MediaBlob(pdf, "application/pdf", "invoice.pdf"))

    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    assert keys == [f"media/{message.media_file.name}"]
    assert s3.get_object(Bucket=BUCKET, Key=keys[0])["Body"].read() == pdf
    client.force_login(factories.manager(chat.channel.business))
    answer = client.get(f"/inbox/media/{message.pk}/")
    assert answer.status_code == 200
    body = b"".join(answer.streaming_content) if answer.streaming else answer.content
    assert body == pdf
    client.force_login(factories.manager(factories.business()))
    assert client.get(f"/inbox/media/{message.pk}/").status_code == 404
