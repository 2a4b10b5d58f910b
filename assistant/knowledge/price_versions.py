"""Writing a price list: a preview applied as the new current version (all or nothing, or
without its bad rows when the admin chooses), an earlier version restored as a new one, one
item of the current version changed (a new version too), and an item's aliases edited in place.
Every version is written by `_write_version`, under the list's row lock, in one transaction."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from assistant.knowledge.price_rows import (
    ImportPreview,
    ImportRejected,
    ParsedRow,
    RowError,
    item_fields,
)
from assistant.models import PriceItem, PriceList, PriceListVersion, split_aliases
from inbox.conversations.models import Business, Channel

# The name the import's log lines always had ("price_list.applied"), kept for whoever filters on it.
log = logging.getLogger("assistant.knowledge.price_import")


def apply_price_list(
    preview: ImportPreview,
    business: Business,
    channel: Channel | None = None,
    user: Any = None,
    *,
    skip_bad_rows: bool = False,
) -> PriceListVersion:
    """Write the preview as the new current version, all or nothing. Raises ImportRejected if
    the preview has errors (the current version is untouched), unless the admin chose
    `skip_bad_rows` and every error is one row's: the good rows are then written and the
    version records how many were left out."""
    skipping = skip_bad_rows and preview.skippable
    if not preview.ok and not skipping:
        raise ImportRejected(preview.errors or [RowError(0, gettext_noop("no rows to import"))])
    items = [
        PriceItem(position=i, **item_fields(row), aliases=row.aliases)
        for i, row in enumerate(preview.rows)
    ]
    return _write_version(
        business,
        channel,
        user,
        items,
        source_name=preview.source_name,
        source_sha256=preview.sha256,
        skipped_rows=len(preview.errors) if skipping else 0,
    )


def restore_version(earlier: PriceListVersion, user: Any = None) -> PriceListVersion:
    """Roll the list back to an earlier version: a new current version copying its items
    (the history keeps every version, the restored one included)."""
    price_list = earlier.price_list
    items = [
        PriceItem(position=item.position, **item_fields(item), aliases=item.aliases)
        for item in earlier.items.order_by("position")
    ]
    if not items:
        raise ImportRejected(
            [
                RowError(
                    0,
                    gettext_noop("version %(number)s has no items"),
                    params={"number": str(earlier.number)},
                )
            ]
        )
    return _write_version(
        price_list.business,
        price_list.channel,
        user,
        items,
        source_name=earlier.source_name,
        source_sha256=earlier.source_sha256,
        restored_from=earlier,
    )


def replace_item(item: PriceItem, row: ParsedRow, user: Any = None) -> PriceListVersion:
    """A new current version equal to the current one but for `item`, which takes `row`'s
    fields: an edit on the price-list page is versioned like an upload (and can be rolled
    back). Raises ImportRejected when `item` is no longer in its list's current version."""
    version = item.version
    price_list = version.price_list
    if price_list.current_version_id != version.pk:
        raise ImportRejected(
            [RowError(0, gettext_noop("the list changed since this page was opened; reload"))]
        )
    items = [
        PriceItem(position=other.position, **item_fields(other), aliases=other.aliases)
        for other in version.items.exclude(pk=item.pk).order_by("position")
    ]
    items.append(PriceItem(position=item.position, **item_fields(row), aliases=row.aliases))
    items.sort(key=lambda each: each.position)
    return _write_version(
        price_list.business,
        price_list.channel,
        user,
        items,
        # The version's name in the words of the admin who made it.
        source_name=gettext("edited on the page: %(name)s") % {"name": row.name},
        source_sha256=version.source_sha256,
        restored_from=None,
        expected_current=version.pk,
    )


def add_item(price_list: PriceList, row: ParsedRow, user: Any = None) -> PriceListVersion:
    """A new current version equal to the current one plus `row` at the end: an item the list
    was missing, added from the weekly review, versioned like an upload. Raises ImportRejected
    when the list has no current version or already holds an item of that name or SKU."""
    version = price_list.current_version
    if version is None:
        raise ImportRejected(
            [RowError(0, gettext_noop("the list has no version yet; upload it first"))]
        )
    existing = list(version.items.order_by("position"))
    if any(other.name.casefold() == row.name.casefold() for other in existing):
        raise ImportRejected(
            [
                RowError(
                    0, gettext_noop("the list already has “%(name)s”"), params={"name": row.name}
                )
            ]
        )
    if row.sku and any(other.sku == row.sku for other in existing):
        raise ImportRejected(
            [
                RowError(
                    0,
                    gettext_noop("the SKU %(sku)s is already in the list"),
                    params={"sku": row.sku},
                )
            ]
        )
    items = [
        PriceItem(position=other.position, **item_fields(other), aliases=other.aliases)
        for other in existing
    ]
    last = max((other.position for other in existing), default=-1)
    items.append(PriceItem(position=last + 1, **item_fields(row), aliases=row.aliases))
    return _write_version(
        price_list.business,
        price_list.channel,
        user,
        items,
        source_name=gettext("added from the review: %(name)s") % {"name": row.name},
        source_sha256=version.source_sha256,
        restored_from=None,
        expected_current=version.pk,
    )


def _write_version(
    business: Business,
    channel: Channel | None,
    user: Any,
    items: list[PriceItem],
    *,
    source_name: str,
    source_sha256: str,
    skipped_rows: int = 0,
    restored_from: PriceListVersion | None = None,
    expected_current: int | None = None,
) -> PriceListVersion:
    """The one writer of versions: number max + 1 under the list's row lock, the items, and
    the flip of `current_version`, in one transaction. With `expected_current`, nothing is
    written unless that version is still the current one (two admins editing at once)."""
    if channel is not None and channel.business_id != business.pk:
        raise ImportRejected([RowError(0, gettext_noop("the channel belongs to another business"))])
    with transaction.atomic():
        price_list, _ = PriceList.objects.get_or_create(business=business, channel=channel)
        # Serialise imports of one list: the version number is max + 1 under this row lock.
        price_list = PriceList.objects.select_for_update().get(pk=price_list.pk)
        if expected_current is not None and price_list.current_version_id != expected_current:
            raise ImportRejected(
                [RowError(0, gettext_noop("the list changed since this page was opened; reload"))]
            )
        last = price_list.versions.aggregate(n=Max("number"))["n"] or 0
        version = PriceListVersion.objects.create(
            price_list=price_list,
            number=last + 1,
            source_name=source_name[:255],
            source_sha256=source_sha256,
            item_count=len(items),
            skipped_rows=skipped_rows,
            restored_from=restored_from,
            created_by=user if getattr(user, "pk", None) else None,
        )
        for item in items:
            item.version = version
        PriceItem.objects.bulk_create(items, batch_size=1000)
        price_list.current_version = version
        price_list.save(update_fields=["current_version", "updated_at"])
    log.info(
        "price_list.applied",
        extra={
            "business_id": business.pk,
            "channel_id": channel.pk if channel else None,
            "version": version.number,
            "items": version.item_count,
            "skipped_rows": skipped_rows,
            "restored_from": restored_from.number if restored_from else None,
        },
    )
    return version


def update_aliases(item: PriceItem, aliases: str) -> None:
    """Set the other names of one item (typed in the admin) and mark its list changed, so every
    process rebuilds that list's knowledge on its next turn."""
    cleaned = ", ".join(split_aliases(aliases))[:500]
    with transaction.atomic():
        PriceItem.objects.filter(pk=item.pk).update(aliases=cleaned)
        PriceList.objects.filter(versions=item.version_id).update(updated_at=timezone.now())
    item.aliases = cleaned
