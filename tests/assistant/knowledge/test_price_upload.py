"""Price-list upload between preview and Apply: applies once, only for its uploader, only while it
lasts, and never a file with errors."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from assistant.knowledge import price_upload
from assistant.knowledge.price_import import ImportRejected, apply_price_list, parse_price_file
from assistant.models import PriceList, PriceListVersion
from inbox.conversations.models import Membership
from inbox.platform.redis import get_redis
from tests import factories
from tests.processes import wait_for

pytestmark = pytest.mark.django_db

GOOD = b"sku,name,price,currency\nT1,Oak table,120000,KZT\nC1,Chair,15000,KZT\n"


def test_a_staged_upload_writes_nothing_until_applied_then_applies_once():
    biz = factories.business()
    owner = factories.manager(biz, role=Membership.Role.ADMIN)

    staged = price_upload.stage(
        GOOD, "prices.csv", "", business_id=biz.pk, channel_id=None, user=owner
    )

    assert [row.name for row in staged.preview.rows] == ["Oak table", "Chair"]
    assert not PriceListVersion.objects.exists()

    taken = price_upload.take(staged.token, owner)
    assert taken is not None
    version = price_upload.apply(taken, owner)

    assert PriceList.objects.get(business=biz, channel=None).current_version == version
    assert (version.number, version.item_count, version.created_by) == (1, 2, owner)
    assert price_upload.take(staged.token, owner) is None
    assert PriceListVersion.objects.count() == 1


def test_a_channel_override_is_applied_to_that_channel_only():
    channel = factories.channel()
    owner = factories.manager(channel.business, role=Membership.Role.ADMIN)
    staged = price_upload.stage(
        GOOD,
        "branch.csv",
        "",
        business_id=channel.business_id,
        channel_id=channel.pk,
        user=owner,
    )

    taken = price_upload.take(staged.token, owner)
    assert taken is not None
    price_upload.apply(taken, owner)

    override = PriceList.objects.get(business=channel.business, channel=channel)
    assert override.current_version is not None
    assert not PriceList.objects.filter(business=channel.business, channel=None).exists()


def test_another_users_token_is_refused_and_stays_the_uploaders():
    biz = factories.business()
    owner = factories.manager(biz, role=Membership.Role.ADMIN)
    colleague = factories.manager(biz, role=Membership.Role.ADMIN)
    staged = price_upload.stage(
        GOOD, "prices.csv", "", business_id=biz.pk, channel_id=None, user=owner
    )

    assert price_upload.take(staged.token, colleague) is None

    assert not PriceList.objects.exists()
    assert price_upload.take(staged.token, owner) is not None


def test_an_unknown_or_discarded_token_is_refused():
    biz = factories.business()
    owner = factories.manager(biz, role=Membership.Role.ADMIN)
    staged = price_upload.stage(
        GOOD, "prices.csv", "", business_id=biz.pk, channel_id=None, user=owner
    )

    price_upload.discard(staged.token)

    assert price_upload.take(staged.token, owner) is None
    assert price_upload.take("no-such-token", owner) is None
    assert price_upload.take("x" * 10_000, owner) is None


def test_an_upload_expires(monkeypatch):
    biz = factories.business()
    owner = factories.manager(biz, role=Membership.Role.ADMIN)
    # Given a stash that lives one second instead of an hour (real Redis does the expiring).
    monkeypatch.setattr(price_upload, "UPLOAD_TTL_SECONDS", 1)
    staged = price_upload.stage(
        GOOD, "prices.csv", "", business_id=biz.pk, channel_id=None, user=owner
    )
    assert price_upload.take(staged.token, owner) is not None

    # Then it is gone once Redis expires it: polled, so a slow machine waits longer, not fails.
    wait_for(lambda: price_upload.take(staged.token, owner) is None, timeout=10,
             message="the upload to expire")  # fmt: skip


def test_a_file_with_a_row_error_is_not_applied_and_the_current_list_stays():
    biz = factories.business()
    owner = factories.manager(biz, role=Membership.Role.ADMIN)
    current = apply_price_list(parse_price_file(GOOD, "old.csv"), biz)
    staged = price_upload.stage(
        b"sku,name,price\nT1,Oak table,abc\nC1,Chair,9000\n",
        "broken.csv",
        "KZT",
        business_id=biz.pk,
        channel_id=None,
        user=owner,
    )
    assert [str(error) for error in staged.preview.errors] == [
        "line 2: the price 'abc' is not a number"
    ]

    taken = price_upload.take(staged.token, owner)
    assert taken is not None
    with pytest.raises(ImportRejected, match="line 2"):
        price_upload.apply(taken, owner)

    price_list = PriceList.objects.get(business=biz, channel=None)
    assert price_list.current_version == current
    assert [item.price for item in current.items.order_by("position")] == [120000, 15000]
    assert PriceListVersion.objects.count() == 1


def test_a_new_upload_replaces_the_users_waiting_one():
    biz = factories.business()
    owner = factories.manager(biz, role=Membership.Role.ADMIN)
    first = price_upload.stage(GOOD, "a.csv", "", business_id=biz.pk, channel_id=None, user=owner)

    second = price_upload.stage(GOOD, "b.csv", "", business_id=biz.pk, channel_id=None, user=owner)

    assert price_upload.take(first.token, owner) is None
    assert price_upload.take(second.token, owner) is not None


def test_redis_keeps_the_parsed_preview_compressed_not_the_file():
    """Three 9 MB previews took a noeviction Redis from 7 to 43 MB; Apply parsed the file again."""
    biz = factories.business()
    owner = factories.manager(biz, role=Membership.Role.ADMIN)
    lines = [f"SKU{i},Oak dining chair model {i} with a long description,{32000 + i},KZT"
             for i in range(5000)]  # fmt: skip
    data = ("sku,name,price,currency\n" + "\n".join(lines) + "\n").encode()

    staged = price_upload.stage(
        data, "big.csv", "", business_id=biz.pk, channel_id=None, user=owner
    )

    kept = get_redis().memory_usage(f"price_upload:{staged.token}")
    assert kept is not None
    assert kept < len(data) / 3
    taken = price_upload.take(staged.token, owner)
    assert taken is not None
    assert taken.preview == staged.preview
    version = price_upload.apply(taken, owner)
    assert version.item_count == 5000
    assert version.items.get(sku="SKU4999").price == 36999


def test_two_quick_clicks_on_apply_write_one_version():
    channel = factories.channel()
    owner = factories.manager(channel.business, role=Membership.Role.ADMIN)
    staged = price_upload.stage(
        GOOD, "prices.csv", "", business_id=channel.business_id, channel_id=None, user=owner
    )
    # Both requests took the upload before either applied it.
    first, second = price_upload.take(staged.token, owner), price_upload.take(staged.token, owner)
    assert first is not None
    assert second is not None

    price_upload.apply(first, owner)
    with pytest.raises(ImportRejected, match="applied already"):
        price_upload.apply(second, owner)

    assert PriceListVersion.objects.count() == 1


def test_thirty_concurrent_uploads_leave_one_preview_in_redis():
    """The one-upload-per-user bound was read, then written: 30 uploads at once left 9
    previews (of up to 8 MB each) in a noeviction Redis for an hour."""
    biz = factories.business()
    owner = factories.manager(biz, role=Membership.Role.ADMIN)
    lines = [f"SKU{i},Oak chair {i},{1000 + i},KZT" for i in range(300)]
    data = ("sku,name,price,currency\n" + "\n".join(lines) + "\n").encode()
    start = threading.Barrier(30)

    def upload(n: int) -> str:
        start.wait()
        staged = price_upload.stage(
            data, f"p{n}.csv", "", business_id=biz.pk, channel_id=None, user=owner
        )
        return staged.token

    with ThreadPoolExecutor(30) as pool:
        tokens = list(pool.map(upload, range(30)))

    waiting = [t for t in tokens if price_upload.take(t, owner) is not None]
    assert len(waiting) == 1
    kept = [key for key in get_redis().scan_iter(match="*price_upload:*")
            if b":user:" not in key]  # fmt: skip
    assert len(kept) == 1
