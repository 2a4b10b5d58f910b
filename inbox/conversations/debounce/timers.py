"""Per-chat debounce, shared by every process through Redis.

People write in bursts ("hi" / "how much is" / "delivery to Almaty?"). Each customer message
(or finished voice transcript) calls `schedule`: it stores a fresh token for the chat and sets
the chat's due time in one sorted set (`DUE_KEY`, chat id → due time in ms) to now plus the
channel's debounce seconds, so a later message of the burst pushes the timer back. The
scheduler loop (`scheduler`) hands each due chat to the assistant queue with the
token it had; the turn goes on only while that token is still the chat's newest (`is_current`),
so a message that comes while a turn runs makes a new token and a later turn, as before.

Claiming is atomic (a Lua script) and leases the chat instead of removing it: its score moves
`lease_ms` ahead, and only after the task is published does `release` drop it (if no newer
message reset it meanwhile). A scheduler that dies between the two leaves the lease to run out
and another scheduler dispatches the chat then: nothing lives in a process's memory. Times come
from the Redis server's clock, so schedulers on several hosts agree on what is due.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from inbox.conversations.models import Chat
from inbox.platform import logs
from inbox.platform.redis import ScriptCall, get_redis, run, run_later

log = logging.getLogger(__name__)

TURN_TASK = "assistant.run_turn"
TOKEN_TTL_SECONDS = 3600
DUE_KEY = "debounce:due"  # sorted set: chat id → due time (Unix ms, the Redis server's clock)
# A scheduler publishes here when a timer became the earliest one, so sleeping schedulers wake
# for it instead of waiting out a sleep computed before it existed.
WAKE_CHANNEL = "debounce:wake"

# KEYS: DUE_KEY. ARGV: wake channel, ttl seconds, the correlation id ('' for none), the token
# nonce, the token and correlation-id key prefixes, then the timers as one argument: "chat delay"
# pairs (delay in ms), space-separated. Sets each chat's token (nonce-chat) and correlation id
# (an earlier burst's id is dropped, not reused), (re)starts each timer, and wakes the
# schedulers when one of them is now the earliest. The keys are built here from the chat ids,
# as the claim script builds them, and the pairs are one string that Lua splits: redis-py
# encodes each argument in Python, two hundred for a consumer's batch of a hundred chats.
_SCHEDULE_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local cid = ARGV[3]
local ours = {}
for chat, ms in string.gmatch(ARGV[7], '(%d+) (%d+)') do
  local delay = tonumber(ms)
  redis.call('SET', ARGV[5] .. chat, ARGV[4] .. '-' .. chat, 'EX', ttl + math.ceil(delay / 1000))
  if cid ~= '' then
    redis.call('SET', ARGV[6] .. chat, cid, 'EX', ttl)
  else
    redis.call('DEL', ARGV[6] .. chat)
  end
  redis.call('ZADD', KEYS[1], now + delay, chat)
  ours[chat] = true
end
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
if head[1] and ours[head[1]] then
  redis.call('PUBLISH', ARGV[1], '1')
end
return now
"""

# KEYS: DUE_KEY. ARGV: limit, lease ms, ttl seconds, token key prefix, fallback token.
# Returns {now, next due or -1, chat, token, lease, chat, token, lease, ...}: the due chats,
# each now leased until `lease`, and the earliest score left (to sleep until).
_CLAIM_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = now + tonumber(ARGV[2])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {now, -1}
for _, chat in ipairs(due) do
  local key = ARGV[4] .. chat
  local token = redis.call('GET', key)
  if not token then
    -- The token ran out while no scheduler ran: the chat still gets its turn.
    token = ARGV[5] .. chat
    redis.call('SET', key, token)
  end
  redis.call('EXPIRE', key, tonumber(ARGV[3]))
  redis.call('ZADD', KEYS[1], lease, chat)
  table.insert(out, chat)
  table.insert(out, token)
  table.insert(out, lease)
end
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if head[2] then
  out[2] = tonumber(head[2])
end
return out
"""

# KEYS: DUE_KEY. ARGV: chat, lease, chat, lease, ... Drops each chat whose score is still the
# lease its dispatch took (a newer message moved it: that timer stays).
_RELEASE_SCRIPT = """
local n = 0
for i = 1, #ARGV, 2 do
  if tonumber(redis.call('ZSCORE', KEYS[1], ARGV[i]) or -1) == tonumber(ARGV[i + 1]) then
    redis.call('ZREM', KEYS[1], ARGV[i])
    n = n + 1
  end
end
return n
"""

# Compare-and-delete: clear the token only if no newer message replaced it meanwhile.
_FINISH_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"""


@dataclass(frozen=True)
class DueChat:
    """A chat whose quiet period is over, leased to the scheduler that claimed it."""

    chat_id: int
    token: str
    lease: int  # the score its lease set (Unix ms); `release` compares against it
    due_ms: int  # when the claim ran (Unix ms, Redis clock): at or after the timer's due time


@dataclass(frozen=True)
class Claim:
    chats: list[DueChat]
    now_ms: int
    next_due_ms: int | None  # the earliest score still in the set (a timer or a lease)


TOKEN_PREFIX = "debounce:"  # + chat id: the token of the chat's newest timer
CID_PREFIX = "debounce_cid:"  # + chat id: the correlation id of the event that started it


def _key(chat_id: int) -> str:
    return f"{TOKEN_PREFIX}{chat_id}"


def _cid_key(chat_id: int) -> str:
    return f"{CID_PREFIX}{chat_id}"


def _delays(chat_ids: list[int]) -> dict[int, float]:
    rows = Chat.objects.filter(pk__in=chat_ids).values_list("pk", "channel__debounce_seconds")
    return {pk: seconds or 0.0 for pk, seconds in rows}


def schedule(chat_id: int, delay: float | None = None) -> str:
    """(Re)start the chat's timer. Returns the token the dispatched turn will carry."""
    return schedule_many([(chat_id, delay)])[chat_id]


def schedule_many(timers: Iterable[tuple[int, float | None]]) -> dict[int, str]:
    """(Re)start several chats' timers in one round trip (a consumer's batch). A delay of None
    is the chat's channel's debounce seconds. Returns each chat's new token."""
    timers = list(timers)
    if not timers:
        return {}
    nonce = _start(timers)
    return {chat_id: f"{nonce}-{chat_id}" for chat_id, _delay in timers}


def _start(timers: list[tuple[int, float | None]], *, committed: bool = False) -> str:
    """`schedule_many`'s work; returns the nonce of the tokens (nonce-chat). `committed`: the
    timers of a transaction that just committed, started with the caller's next round trip
    where it sends several (`redis.sent_together`: the ingest consumer's batch), and a failing
    script logged there rather than raised, as the on-commit hook it runs from would."""
    missing = [chat_id for chat_id, delay in timers if delay is None]
    known = _delays(missing) if missing else {}
    # One random part per call, the chat id after it: unique per chat and call, and one
    # random read instead of one per chat of a consumer's batch.
    nonce = uuid.uuid4().hex
    # The turn task will carry the correlation id of the event that started the timer.
    args: list[Any] = [WAKE_CHANNEL, TOKEN_TTL_SECONDS, logs.correlation_id.get() or "", nonce,
                       TOKEN_PREFIX, CID_PREFIX]  # fmt: skip
    pairs: list[str] = []
    for chat_id, delay in timers:
        seconds = known.get(chat_id, 0.0) if delay is None else delay
        pairs.append(f"{int(chat_id)} {max(0, round(seconds * 1000))}")
    args.append(" ".join(pairs))
    call = ScriptCall("debounce.schedule", _SCHEDULE_SCRIPT, [DUE_KEY], args, robust=committed)
    if committed:
        run_later(call)
    else:
        run(call)
    log.debug("debounce.scheduled", extra={"chats": len(timers)})
    return nonce


def correlation_ids(chat_ids: list[int]) -> dict[int, str]:
    """The correlation id of the event that last started each chat's timer (where known)."""
    if not chat_ids:
        return {}
    values = get_redis().mget([_cid_key(chat_id) for chat_id in chat_ids])
    return {
        chat_id: value.decode() if isinstance(value, bytes) else str(value)
        for chat_id, value in zip(chat_ids, values, strict=True)
        if value
    }


def _commit_timers() -> tuple[Callable[[], None], dict[int, float | None]]:
    """The timers one transaction asked for and the on-commit callback that starts them all in
    one `schedule_many` (a consumer's batch touches up to a hundred chats: one round trip)."""
    timers: dict[int, float | None] = {}

    def start_timers() -> None:
        if timers:
            _start(list(timers.items()), committed=True)

    return start_timers, timers


def schedule_on_commit(chat_id: int, delay: float | None = None) -> None:
    """Schedule after commit (at once outside a transaction). If Redis is away at that moment
    the turn is not lost: the consumer cannot acknowledge the event either, and its replay
    re-arms the turn (`ingest.chats.rearm_unanswered`); `resume_unanswered_chats` is the last
    safety net. A timer asked for inside a savepoint that then rolled back still starts when
    the transaction's earlier timers do; that is harmless (a turn answers only what is
    unanswered, as a re-armed replay does)."""
    schedule_many_on_commit({chat_id: delay})


def schedule_many_on_commit(timers: dict[int, float | None]) -> None:
    """`schedule_on_commit` for several chats (a consumer's batch: one call, not one per
    chat)."""
    if not timers:
        return
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        schedule_many(timers.items())
        return
    pending = getattr(connection, "_debounce_timers", None)
    # Still registered unless the transaction (or the savepoint that registered it) rolled
    # back; Django keeps on-commit callbacks as (savepoint ids, callback, robust).
    if pending is None or not any(entry[1] is pending[0] for entry in connection.run_on_commit):
        pending = _commit_timers()
        connection._debounce_timers = pending
        transaction.on_commit(pending[0], robust=True)
    pending[1].update(timers)


def claim_due(limit: int, lease_seconds: float) -> Claim:
    """Lease up to `limit` chats whose timer is due. Atomic: two schedulers never claim the
    same chat's timer; a lease that runs out (its scheduler died) makes the chat due again."""
    fallback = f"lost-{uuid.uuid4().hex}-"
    raw: list[Any] = get_redis().register_script(_CLAIM_SCRIPT)(
        keys=[DUE_KEY],
        args=[
            limit,
            max(1, round(lease_seconds * 1000)),
            TOKEN_TTL_SECONDS,
            TOKEN_PREFIX,
            fallback,
        ],
    )
    now, head = int(raw[0]), int(raw[1])
    chats = [
        DueChat(int(raw[i]), bytes(raw[i + 1]).decode(), int(raw[i + 2]), now)
        for i in range(2, len(raw), 3)
    ]
    return Claim(chats, now, None if head < 0 else head)


def release(chats: Iterable[DueChat]) -> int:
    """Their turns are published: drop their leases. A chat a newer message re-armed keeps its
    new timer. Returns how many were dropped."""
    args: list[Any] = []
    for chat in chats:
        args += [chat.chat_id, chat.lease]
    if not args:
        return 0
    return int(get_redis().register_script(_RELEASE_SCRIPT)(keys=[DUE_KEY], args=args))


def is_current(chat_id: int, token: str) -> bool:
    """True while `token` is the chat's newest: the turn carrying it should run."""
    value: Any = get_redis().get(_key(chat_id))
    return value is not None and bytes(value).decode() == token


def finish(chat_id: int, token: str) -> None:
    """The turn for `token` is done; a newer token (a message that came meanwhile) stays."""
    script = get_redis().register_script(_FINISH_SCRIPT)
    script(keys=[_key(chat_id)], args=[token])
