"""Fixtures the live-socket tests share: two tenants and the websockets a test opens."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections

from tests.inbox.tenants import Tenant, tenant


@pytest.fixture
def a() -> Tenant:
    return tenant("A")


@pytest.fixture
def b() -> Tenant:
    return tenant("B")


@pytest_asyncio.fixture
async def sockets() -> AsyncIterator[list[WebsocketCommunicator]]:
    opened: list[WebsocketCommunicator] = []
    yield opened
    for communicator in opened:
        await communicator.disconnect()
    await sync_to_async(connections.close_all)()
