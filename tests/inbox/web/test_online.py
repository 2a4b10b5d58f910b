"""An open inbox page makes its manager online for auto-assignment; closing it ends that."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from inbox.conversations import online
from tests.inbox.tenants import tenant
from tests.inbox.web.test_live import connect

pytestmark = pytest.mark.django_db(transaction=True)


async def _online(business_id: int) -> set[int]:
    return await sync_to_async(online.online_user_ids)(business_id)


@pytest.mark.asyncio
async def test_an_open_socket_is_online_in_its_own_business_only() -> None:
    a = await sync_to_async(tenant)("A")
    b = await sync_to_async(tenant)("B")
    try:
        socket = await connect(a.manager)  # returns once the server said hello
        assert await _online(a.business.pk) == {a.manager.pk}
        assert await _online(b.business.pk) == set()
        await socket.disconnect()
        assert await _online(a.business.pk) == set()
    finally:
        await sync_to_async(connections.close_all)()
