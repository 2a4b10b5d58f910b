"""Price-list upload between the preview and Apply: one home for both settings pages.

    token = submit(data, "prices.csv", "KZT", business_id=b.pk, channel_id=None, user=user)
    # ... a Celery worker parses it (parse_upload); the page polls ...
    parsing(token, user)                # True while the worker reads the file
    staged = take(token, user)          # None: expired, applied already, or not theirs
    version = apply(staged, user)       # raises ImportRejected; the current list stays

`stage` parses in the calling process (tests and scripts with a small file they trust; no page
calls it). The price-list settings page, the one upload page (the Django admin's import URL
leads there), submits instead: the file waits in the default storage only until a worker on the
`bulk` queue parses it under a time limit (PRICE_UPLOAD_TIME_LIMIT_SECONDS), a memory limit
(PRICE_UPLOAD_MEMORY_MB) and a lower CPU priority, so a hostile spreadsheet costs a bulk worker,
never the web process nor the workers that answer customers.

One parse per business runs at a time: a newer upload for the same business replaces the one
still being read. Its task is revoked (SIGUSR1 stops a running parse as its soft time limit
would, so the worker cleans up and stays), the parse also checks between row batches, and the
replaced upload ends as a file error saying so, on its page and its job. The same user's newer
upload replaces their older one outright (stopping its parse the same way).

What waits in Redis under a random token for an hour is the parsed preview, compressed, not the
file: Apply writes exactly the rows that were previewed without reading the file again, and a 9 MB
spreadsheet does not sit in a `noeviction` Redis as 9 MB. Each user has at most one upload waiting
(a new one replaces it), tied to them so no one else can apply it. The bound holds under
concurrent uploads because each change of the store is one Redis script (`_KEEP`,
`_STORE_PREVIEW`): a new upload and the deletion of the one it replaces happen together, and a
worker's preview is written only while its upload still waits. Who settles a parse's outcome
(its worker, a replacing upload, a discard) is one SET NX per upload (`_decide`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import resource
import secrets
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.utils import uuid
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils.translation import gettext_noop

from assistant.knowledge.price_import import (
    ImportPreview,
    ImportRejected,
    ParsedRow,
    Progress,
    RowError,
    apply_price_list,
    parse_price_file,
)
from assistant.models import PriceListVersion
from inbox.conversations import progress
from inbox.conversations.access import User
from inbox.conversations.models import Business, Channel, Job
from inbox.platform.redis import ScriptCall, get_redis, run

log = logging.getLogger(__name__)

UPLOAD_TTL_SECONDS = 3600
# How long one Apply holds its upload against a second one (longer than any apply takes).
APPLY_CLAIM_SECONDS = 300
PARSE_TASK = "assistant.parse_price_upload"
# token_urlsafe(16) is 22 characters; anything much longer is not ours and never a cache key.
MAX_TOKEN_CHARS = 64
REPLACED = gettext_noop("replaced by a newer upload before it was read")
# A parse yields the CPU to the turns where its pool shares a host with the assistant workers:
# the lowest priority (bench/fair_workers.py, 2 shared cores: B's reply p50 ×0.97–1.48 of its
# floor at 10, ×1.08–1.11 at 19; ×1.6 at 10 without the autogroup). Its
# time limit is wall time, so on a host busy with turns a big file may run out of it first.
PARSE_NICENESS = 19


class _Replaced(Exception):
    """The upload being parsed was replaced (or discarded) meanwhile: stop reading it."""


@dataclass(frozen=True)
class StagedUpload:
    """An uploaded file waiting for Apply: its token, its preview and the list it would replace
    (the business's, or one channel's override when channel_id is set)."""

    token: str
    preview: ImportPreview
    business_id: int
    channel_id: int | None
    user_id: int
    job_id: int | None = None  # the worker's progress (inbox.conversations.progress)


def stage(
    data: bytes,
    filename: str,
    currency: str,
    *,
    business_id: int,
    channel_id: int | None,
    user: User,
) -> StagedUpload:
    """Parse the file for a preview and keep it for an hour for this user's Apply. Writes no
    price list, even when the preview is clean."""
    user_id = _uploader(user)
    preview = parse_price_file(data, filename, currency)
    token = secrets.token_urlsafe(16)
    entry = _Entry(business_id, channel_id, user_id)
    _keep(token, entry, _pack(preview))
    return StagedUpload(token, preview, business_id, channel_id, user_id)


def submit(
    data: bytes,
    filename: str,
    currency: str,
    *,
    business_id: int,
    channel_id: int | None,
    user: User,
) -> str:
    """Hand the file to a worker for its preview and return the upload's token. Until the
    worker is done, `parsing(token, user)` is True and `take` is None."""
    user_id = _uploader(user)
    token = secrets.token_urlsafe(16)
    path = default_storage.save(_file_name(token), ContentFile(data))
    job_id = progress.start(business_id, Job.Kind.PRICE_IMPORT)
    task_id = uuid()
    entry = _Entry(business_id, channel_id, user_id, job_id, parsing=True, task=task_id,
                   filename=filename[:255])  # fmt: skip
    _keep(token, entry)
    # One parse per business: SET … GET names the upload this one replaces, once.
    previous = get_redis().set(_business_key(business_id), token, ex=UPLOAD_TTL_SECONDS, get=True)
    if isinstance(previous, bytes):
        _replace(previous.decode())
    # The limits travel with the message (Celery applies the sender's over the worker's).
    limit = settings.PRICE_UPLOAD_TIME_LIMIT_SECONDS
    parse_upload.apply_async(
        (token, path, filename[:255], currency),
        task_id=task_id,
        soft_time_limit=limit,
        time_limit=limit + 15,
    )
    return token


def parsing(token: str, user: User) -> bool:
    """True while a worker still reads this user's upload."""
    entry, _preview = _read(token, user)
    return entry is not None and entry.parsing


@shared_task(
    name=PARSE_TASK,
    acks_late=True,
    soft_time_limit=settings.PRICE_UPLOAD_TIME_LIMIT_SECONDS,
    time_limit=settings.PRICE_UPLOAD_TIME_LIMIT_SECONDS + 15,
)
def parse_upload(token: str, path: str, filename: str, currency: str) -> None:
    """Parse a submitted file into its preview (the worker side of `submit`). Too slow, too
    big for the memory limit, or unreadable: the preview is a file error, never a lost upload.
    Replaced meanwhile: it stops and stores nothing. The file is deleted either way."""
    job_id: int | None = None
    try:
        client = get_redis()
        # Named before the check below, so a replacement either sees where to send its revoke
        # or is seen by the check.
        runner = parse_upload.request.hostname
        if runner:
            client.set(_runner_key(token), runner, ex=UPLOAD_TTL_SECONDS)
        waiting = _entry(client.hget(_key(token), "meta"))
        if waiting is None or not waiting.parsing or _decided(token):
            return  # replaced by a newer upload, or expired
        job_id = waiting.job
        _yield_cpu()
        with default_storage.open(path, "rb") as handle:
            data = handle.read()
        sha = hashlib.sha256(data).hexdigest()
        try:
            with _memory_limit(settings.PRICE_UPLOAD_MEMORY_MB * 1024 * 1024):
                preview = parse_price_file(data, filename, currency, _reporter(job_id, token))
        except SoftTimeLimitExceeded:
            if _decided(token):  # the signal was the revoke of a replaced upload
                raise _Replaced from None
            limit = {"seconds": str(settings.PRICE_UPLOAD_TIME_LIMIT_SECONDS)}
            text = gettext_noop("reading the file took longer than %(seconds)s seconds")
            preview = _failed(filename, sha, text, limit)
        except MemoryError:
            limit = {"mb": str(settings.PRICE_UPLOAD_MEMORY_MB)}
            text = gettext_noop("reading the file needed more than %(mb)s MB of memory")
            preview = _failed(filename, sha, text, limit)
        log.info("price_upload.parsed", extra={"rows": len(preview.rows),
                                               "errors": len(preview.errors)})  # fmt: skip
        if not _decide(token, "parsed"):
            raise _Replaced  # replaced or discarded meanwhile: its preview is not wanted
        # The job ends before the preview shows: the page never sees a ready preview
        # beside a running job.
        if job_id is not None:
            blocking = [e for e in preview.errors if e.blocking or e.line == 0]
            progress.report(job_id, done=len(preview.rows), errors=len(preview.errors))
            progress.finish(job_id, error=str(blocking[0]) if blocking else "")
        parsed = dataclasses.replace(waiting, parsing=False)
        # Kept only if not replaced or discarded meanwhile (checked and written in one step).
        run(ScriptCall("price_upload.store_preview", _STORE_PREVIEW, [_key(token)],
                       [parsed.dumps(), _pack(preview), UPLOAD_TTL_SECONDS]))  # fmt: skip
    except _Replaced:
        log.info("price_upload.replaced")
    except SoftTimeLimitExceeded:
        if not _decided(token):
            raise
        log.info("price_upload.replaced")  # the revoke's signal came between two steps
    finally:
        default_storage.delete(path)
        if job_id is not None:
            progress.finish(job_id, error="the file could not be read")  # no-op once finished


def _reporter(job_id: int | None, token: str) -> Progress:
    """The parse's progress callback: rows read of the file's rows, errors so far; and the
    check, between row batches, that the upload is still wanted (a revoke may be lost)."""

    def report(done: int, total: int, errors: int) -> None:
        if _decided(token):
            raise _Replaced
        if job_id is not None:
            progress.report(job_id, done=done, total=total, errors=errors)

    return report


def _yield_cpu() -> None:
    """Run this worker process at PARSE_NICENESS from now on (a process cannot raise its
    priority back; a bulk pool's processes run only bulk work). Linux weighs each session's
    autogroup alike whatever its processes' nice values, and a worker is a session of its own
    (`make run`, systemd), so its autogroup is lowered too; a cgroup's weight (a container,
    a systemd unit) is the deployment's to set (deploy/)."""
    if os.getpriority(os.PRIO_PROCESS, 0) < PARSE_NICENESS:
        os.setpriority(os.PRIO_PROCESS, 0, PARSE_NICENESS)
    with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as group:
        group.write(str(PARSE_NICENESS))


@contextmanager
def _memory_limit(extra_bytes: int) -> Iterator[None]:
    """Let this process grow by at most `extra_bytes` of address space meanwhile (a MemoryError
    past it). A Celery prefork child runs one task at a time, so the limit is this parse's."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        in_use = int(statm.read().split()[0]) * resource.getpagesize()
    limit = in_use + extra_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _failed(filename: str, sha: str, message: str, params: dict[str, str]) -> ImportPreview:
    return ImportPreview(filename, sha, {}, (), (RowError(0, message, params=params),))


def take(token: str, user: User) -> StagedUpload | None:
    """The upload staged under this token; None if it expired, was applied already, was
    replaced by a newer upload, or was staged by another user (whose upload stays theirs)."""
    entry, packed = _read(token, user)
    if entry is None or packed is None:
        return None
    return StagedUpload(
        token[:MAX_TOKEN_CHARS], _unpack(packed), entry.business, entry.channel, entry.user,
        entry.job,
    )  # fmt: skip


def job_of(token: str, user: User) -> int | None:
    """The progress job of this user's upload (parsing or parsed), for the page to show."""
    entry, _preview = _read(token, user)
    return entry.job if entry is not None else None


def apply(staged: StagedUpload, user: User, *, skip_bad_rows: bool = False) -> PriceListVersion:
    """Write the staged file as the list's new current version, all or nothing, and forget the
    upload so it applies once. Raises ImportRejected if the file has errors (the current list
    stays, and so does the upload), unless the admin chose to skip the bad rows and every
    error is one row's."""
    # Two quick clicks on Apply (or two tabs) both took the upload: one of them writes it.
    claim = _applying_key(staged.token)
    client = get_redis()
    claimed = client.set(claim, str(user.pk), nx=True, ex=APPLY_CLAIM_SECONDS)
    if not claimed or not client.exists(_key(staged.token)):
        raise ImportRejected(
            [RowError(0, gettext_noop("this upload is being applied already, or was applied"))]
        )
    business = Business.objects.get(pk=staged.business_id)
    channel = Channel.objects.get(pk=staged.channel_id) if staged.channel_id else None
    try:
        version = apply_price_list(
            staged.preview, business, channel, user, skip_bad_rows=skip_bad_rows
        )
    except BaseException:
        client.delete(claim)  # the upload stays, for another try (e.g. skipping bad rows)
        raise
    discard(staged.token)
    return version


def discard(token: str) -> None:
    """Forget a staged upload; its token is refused from now on (a worker still parsing it
    stops and drops its preview, and its progress shows it ended)."""
    token = token[:MAX_TOKEN_CHARS]
    pipe = get_redis().pipeline()  # MULTI: read and deleted together
    pipe.hget(_key(token), "meta")
    pipe.delete(_key(token))
    _stop(token, _entry(pipe.execute()[0]), "discarded")


def _replace(token: str) -> None:
    """Stop the parse of an upload a newer one for its business replaces: one still being read
    ends as a file error saying it was replaced, on its page and its job; a ready preview stays,
    for its uploader's Apply; a gone one stays gone."""
    entry = _entry(get_redis().hget(_key(token), "meta"))
    if entry is None or not _stop(token, entry, "replaced"):
        return
    replaced = ImportPreview(entry.filename, "", {}, (), (RowError(0, REPLACED),))
    ended = dataclasses.replace(entry, parsing=False)
    # Written only while the upload still waits (its uploader may have discarded it meanwhile).
    run(ScriptCall("price_upload.store_preview", _STORE_PREVIEW, [_key(token)],
                   [ended.dumps(), _pack(replaced), UPLOAD_TTL_SECONDS]))  # fmt: skip
    log.info("price_upload.replaced_running")


def _stop(token: str, entry: _Entry | None, outcome: str) -> bool:
    """Settle a parsing upload as replaced or discarded, revoke its running parse and end its
    job; True if this caller settled it (False: not parsing, gone, or parsed already)."""
    if entry is None or not entry.parsing or not _decide(token, outcome):
        return False
    _revoke(token, entry.task)
    if entry.job is not None:
        progress.finish(entry.job, error=REPLACED if outcome == "replaced" else "cancelled")
    return True


def _revoke(token: str, task_id: str | None) -> None:
    """Stop a running parse of a decided upload: SIGUSR1 raises its soft time limit inside the
    parse (the worker process cleans up and stays). Sent only to the worker running it; one
    not started yet sees the decision and returns."""
    runner = get_redis().get(_runner_key(token))
    if task_id and isinstance(runner, bytes):
        parse_upload.app.control.revoke(
            task_id, destination=[runner.decode()], terminate=True, signal="SIGUSR1"
        )


def _decide(token: str, outcome: str) -> bool:
    """Settle an upload's outcome ("parsed", "replaced", "discarded") once: the worker, a newer
    upload and a discard race for it, and only the caller that gets True acts on it."""
    return bool(get_redis().set(_outcome_key(token), outcome, nx=True, ex=UPLOAD_TTL_SECONDS))


def _decided(token: str) -> bool:
    return bool(get_redis().exists(_outcome_key(token)))


def _uploader(user: User) -> int:
    if not user.is_authenticated:
        raise PermissionDenied("an upload belongs to a signed-in user")
    return int(user.pk)


@dataclass(frozen=True)
class _Entry:
    """What Redis holds beside an upload's preview (a hash: `meta` as JSON, `preview`)."""

    business: int
    channel: int | None
    user: int
    job: int | None = None
    parsing: bool = False
    task: str | None = None  # the Celery task id of its parse, for a revoke
    filename: str = ""

    def dumps(self) -> str:
        return json.dumps(dataclasses.asdict(self))


def _entry(raw: bytes | str | None) -> _Entry | None:
    return _Entry(**json.loads(raw)) if raw else None


def _read(token: str, user: User) -> tuple[_Entry | None, bytes | None]:
    """This user's upload under the token and its packed preview (None while parsing); (None,
    None) for anyone else's, an expired one, or a user not signed in."""
    if not user.is_authenticated:
        return None, None
    meta, packed = get_redis().hmget(_key(token[:MAX_TOKEN_CHARS]), ["meta", "preview"])
    entry = _entry(meta)
    if entry is None or entry.user != user.pk:
        return None, None
    return entry, packed if isinstance(packed, bytes) else None


# One upload per user. KEYS: the upload, its user's pointer. ARGV: token, meta, seconds to
# keep, packed preview ('' while a worker reads the file), the key prefix of uploads. The
# pointer is swapped and the upload it named deleted in the same step, so uploads at once
# each delete the one before theirs; the deleted upload's token and meta are returned.
_KEEP = """
redis.call('DEL', KEYS[1])
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], 'meta', ARGV[2], 'preview', ARGV[4])
else
  redis.call('HSET', KEYS[1], 'meta', ARGV[2])
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
local old = redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[3], 'GET')
if not old or old == ARGV[1] then
  return false
end
local replaced = ARGV[5] .. old
local meta = redis.call('HGET', replaced, 'meta')
redis.call('DEL', replaced)
return {old, meta}
"""

# A worker's preview, kept only while its upload still waits. KEYS: the upload. ARGV: meta,
# packed preview, seconds to keep.
_STORE_PREVIEW = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'meta', ARGV[1], 'preview', ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""


def _keep(token: str, entry: _Entry, packed_preview: bytes = b"") -> None:
    """Keep an upload for its user's Apply: one waiting upload per user, a new one replaces it
    (and stops its parse if a worker is still reading it)."""
    replaced = run(
        ScriptCall(
            "price_upload.keep",
            _KEEP,
            [_key(token), _user_key(entry.user)],
            [token, entry.dumps(), UPLOAD_TTL_SECONDS, packed_preview, _key("")],
        )
    )
    if replaced:
        old, meta = replaced
        _stop(old.decode(), _entry(meta), "replaced")


def _file_name(token: str) -> str:
    return f"price-uploads/{token}"


def _applying_key(token: str) -> str:
    return f"price_upload:applying:{token}"


def _key(token: str) -> str:
    return f"price_upload:{token}"


def _user_key(user_id: int) -> str:
    return f"price_upload:user:{user_id}"


def _business_key(business_id: int) -> str:
    """The token of the business's newest upload, swapped atomically."""
    return f"price_upload:business:{business_id}"


def _outcome_key(token: str) -> str:
    return f"price_upload:outcome:{token}"


def _runner_key(token: str) -> str:
    """The Celery worker (node name) that took the upload's parse."""
    return f"price_upload:runner:{token}"


def _pack(preview: ImportPreview) -> bytes:
    """The preview as compressed JSON (amounts as exact decimal strings)."""
    data = dataclasses.asdict(preview)
    return zlib.compress(json.dumps(data, default=str, ensure_ascii=False).encode(), 6)


def _unpack(raw: bytes) -> ImportPreview:
    data = json.loads(zlib.decompress(raw))
    rows = tuple(ParsedRow(**{**row, "price": Decimal(row["price"])}) for row in data["rows"])
    return ImportPreview(
        data["source_name"],
        data["sha256"],
        data["columns"],
        rows,
        tuple(RowError(**error) for error in data["errors"]),
        tuple(data["warnings"]),
    )
