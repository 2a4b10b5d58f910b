"""Playing back a message's original media (the customer's voice note) in the dashboard.

`/inbox/media/<message id>/` serves the stored file to managers who may see the chat
(`inbox.conversations.access.can_see_chat`); everyone else gets 404, whether the message exists or
not. Browsers' audio players seek with HTTP Range requests, so single byte ranges are answered with
206 Partial Content (`bytes=a-b`, `bytes=a-`, `bytes=-n`); an unsatisfiable range gets 416;
several ranges at once get the whole file (allowed by RFC 9110). Files are served inline only
for audio, video and raster images; anything else is a download, so a file a customer sent can
never run as a page of ours.
"""

from __future__ import annotations

import hashlib
import mimetypes
import re
import unicodedata
from urllib.parse import quote

from django.contrib.auth.decorators import login_required
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
)
from django.views.decorators.http import require_safe

from inbox.conversations import access
from inbox.conversations.models import Message
from inbox.web.params import parse_id

# Voice notes are small (5 minutes of Opus is about 1 MB): answered from memory, which
# serves ASGI without a thread per chunk. A larger range is answered in part, with the
# Content-Range saying which part, as RFC 9110 allows; players ask for the rest.
WHOLE_IN_MEMORY = 16 * 1024 * 1024
MAX_RANGE = 4 * 1024 * 1024
_RANGE = re.compile(r"^bytes=([0-9]*)-([0-9]*)$")
_INLINE = re.compile(r"^(audio|video)/[\w.+-]+$|^image/(png|jpeg|gif|webp)$")


@login_required
@require_safe
def message_media(request: HttpRequest, message_id: int) -> HttpResponseBase:
    fields = ("pk", "chat_id", "media_file", "media_mime", "media_filename")
    message = Message.objects.filter(pk=message_id).only(*fields).first()
    if (
        message is None
        or not message.media_file
        or not access.can_see_chat(request.user, message.chat_id)
    ):
        raise Http404("No such media.")
    try:
        size = message.media_file.size
    except OSError as exc:
        raise Http404("The media file is missing.") from exc
    content_type, disposition = _type_and_disposition(message)
    etag = _etag(message, size)
    try:
        span = _requested_range(request, size, etag)
    except _Unsatisfiable:
        refused = HttpResponse(status=416)
        refused["Content-Range"] = f"bytes */{size}"
        return refused
    head = request.method == "HEAD"
    response: HttpResponseBase
    if span is None and (head or size > WHOLE_IN_MEMORY):
        response = (
            HttpResponse(content_type=content_type)
            if head
            else FileResponse(message.media_file.open("rb"), content_type=content_type)
        )
        response["Content-Length"] = str(size)
    elif span is None:
        with message.media_file.open("rb") as handle:
            response = HttpResponse(handle.read(), content_type=content_type)
    else:
        start, end = span[0], min(span[1], span[0] + MAX_RANGE - 1)
        with message.media_file.open("rb") as handle:
            handle.seek(start)
            body = b"" if head else handle.read(end - start + 1)
        response = HttpResponse(body, status=206, content_type=content_type)
        response["Content-Range"] = f"bytes {start}-{end}/{size}"
        response["Content-Length"] = str(end - start + 1)
    response["Accept-Ranges"] = "bytes"
    response["ETag"] = etag
    response["Content-Disposition"] = disposition
    response["Cache-Control"] = "private, max-age=3600"
    response["Content-Security-Policy"] = "sandbox"
    return response


class _Unsatisfiable(Exception):
    pass


def _etag(message: Message, size: int) -> str:
    digest = hashlib.sha256(f"{message.pk}:{message.media_file.name}:{size}".encode())
    return f'"{digest.hexdigest()[:32]}"'


def _requested_range(request: HttpRequest, size: int, etag: str) -> tuple[int, int] | None:
    """(first byte, last byte), or None for the whole file; raises _Unsatisfiable (416)."""
    header = request.headers.get("Range", "").strip()
    if not header:
        return None
    if_range = request.headers.get("If-Range")
    if if_range is not None and if_range.strip() != etag:
        return None  # the file changed since the client's copy: send all of it
    match = _RANGE.match(header.replace(" ", ""))
    if match is None:
        return None  # several ranges, or a unit we don't serve: the whole file is a valid answer
    first, last = match.groups()
    if not first and not last:
        return None
    if not first:  # the last n bytes
        suffix = _position(last, size)
        if suffix == 0 or size == 0:
            raise _Unsatisfiable
        return max(0, size - suffix), size - 1
    start = _position(first, size)
    end = min(_position(last, size), size - 1) if last else size - 1
    if start >= size or (last and _position(last, size) < start):
        raise _Unsatisfiable
    return start, end


def _position(digits: str, size: int) -> int:
    """A byte position of the Range header: a number longer than any id lies past the end of
    every file we serve (RFC 9110 allows any length; `int` of 4,300 digits raises)."""
    parsed = parse_id(digits)
    return size if parsed is None else parsed


def _type_and_disposition(message: Message) -> tuple[str, str]:
    name = message.media_filename or str(message.media_file.name).rsplit("/", 1)[-1]
    mime = (message.media_mime or mimetypes.guess_type(name)[0] or "").strip()
    safe_name = re.sub(r"[^\w.\- ]", "_", name)[:100] or f"media-{message.pk}"
    if _INLINE.match(mime.split(";")[0].strip().lower()):
        return mime, f"inline; {_filename_parameters(safe_name, message.pk)}"
    return "application/octet-stream", f"attachment; {_filename_parameters(safe_name, message.pk)}"


def _filename_parameters(name: str, message_id: int) -> str:
    """`filename="…"` alone for an ASCII name; otherwise an ASCII fallback plus RFC 6266's
    `filename*=UTF-8''…`, which browsers decode (an RFC 2047 `=?utf-8?b?…?=` header, what a
    non-ASCII header value becomes otherwise, they show as is). `name` holds no quote."""
    if name.isascii():
        return f'filename="{name}"'
    stem, dot, extension = name.rpartition(".")
    if not dot:
        stem, extension = name, ""
    ascii_stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode()
    ascii_stem = re.sub(r"[^\w.\- ]", "_", ascii_stem).strip(" _") or f"media-{message_id}"
    ascii_extension = re.sub(r"[^A-Za-z0-9]", "", extension)
    fallback = f"{ascii_stem}.{ascii_extension}" if ascii_extension else ascii_stem
    return f"filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"
