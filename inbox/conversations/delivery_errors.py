"""Why a message was not delivered, in the manager's words, and what each reason changes.

One table for every WhatsApp error code we explain (`EXPLANATIONS`); the message template, the
JSON API, the failure notice and the resend check all read it here. A Meta code we do not list
gets a generic sentence plus Meta's own title; our own codes (a send cancelled, a file not
kept) already carry a sentence written for the manager and are shown as they are.

The sentences are English constants (`gettext_noop`): the JSON API and Bitrix24 send them as
they are, for programs; where a member reads them (the message's failure line, the failure
notification, a resend refused) they are asked for `translated`, in the active language.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from django.utils.translation import gettext, gettext_noop


class Code(StrEnum):
    """The WhatsApp Cloud API codes that change what we show or do."""

    UNDELIVERABLE = "131026"
    OUTSIDE_WINDOW = "131047"
    ECOSYSTEM_LIMIT = "131049"
    STOPPED_MARKETING = "131050"
    UNSUPPORTED_TYPE = "131051"
    MEDIA_DOWNLOAD = "131052"
    MEDIA_UPLOAD = "131053"
    RATE_LIMIT = "130429"
    PAIR_RATE_LIMIT = "131056"
    GENERIC = "131000"


@dataclass(frozen=True)
class Explanation:
    text: str
    # Why sending the same message again cannot work ("" when a resend may succeed).
    no_resend: str = ""


EXPLANATIONS: dict[str, Explanation] = {
    Code.UNDELIVERABLE: Explanation(
        gettext_noop(
            "This number is not on WhatsApp or cannot receive messages right now: the customer "
            "cannot be reached here. The assistant stops answering until the customer writes "
            "again."
        ),
        no_resend=gettext_noop(
            "The customer cannot receive WhatsApp messages on this number: sending again will "
            "fail the same way. Wait until the customer writes, or reach them another way."
        ),
    ),
    Code.OUTSIDE_WINDOW: Explanation(
        gettext_noop(
            "More than 24 hours have passed since the customer last wrote: WhatsApp only lets a "
            "template message through until they write again."
        ),
        no_resend=gettext_noop(
            "More than 24 hours have passed since the customer last wrote: only a template "
            "message can be sent now."
        ),
    ),
    Code.ECOSYSTEM_LIMIT: Explanation(
        gettext_noop(
            "WhatsApp held this message back: it limits how many marketing messages one person "
            "receives. Try again later or wait for the customer to write."
        )
    ),
    Code.STOPPED_MARKETING: Explanation(
        gettext_noop("The customer asked WhatsApp to stop marketing messages from this business.")
    ),
    Code.UNSUPPORTED_TYPE: Explanation(
        gettext_noop("WhatsApp does not support this kind of message.")
    ),
    Code.MEDIA_DOWNLOAD: Explanation(
        gettext_noop(
            "WhatsApp could not fetch the attached file. Send it again, or as another format."
        )
    ),
    Code.MEDIA_UPLOAD: Explanation(
        gettext_noop(
            "WhatsApp did not accept the attached file (its type or size). Send it in another "
            "format."
        )
    ),
    Code.RATE_LIMIT: Explanation(
        gettext_noop(
            "Too many messages were sent from this number in a short time. Send it again in a "
            "minute."
        )
    ),
    Code.PAIR_RATE_LIMIT: Explanation(
        gettext_noop(
            "Too many messages were sent to this customer in a short time. Send it again in a "
            "minute."
        )
    ),
}

GENERIC_SENTENCE = gettext_noop("WhatsApp could not deliver this message.")
GENERIC_WITH_TITLE = gettext_noop(
    "WhatsApp could not deliver this message. WhatsApp says: %(title)s"
)


def _english(text: str) -> str:
    return text


def _words(translated: bool) -> Callable[[str], str]:
    return gettext if translated else _english


def is_provider_code(code: str) -> bool:
    """WhatsApp's codes are numbers; ours ("cancelled", "storage", …) are words."""
    return code.isascii() and code.isdigit()


def explain(code: str, title: str, *, translated: bool = False) -> str:
    """The sentence shown under a failed message (plain text: the template escapes it), in
    English, or `translated` into the active language for a member. Meta's own title is quoted
    as it came."""
    words = _words(translated)
    known = EXPLANATIONS.get(code)
    if known is not None:
        return words(known.text)
    if is_provider_code(code) or not title:
        return words(GENERIC_WITH_TITLE) % {"title": title} if title else words(GENERIC_SENTENCE)
    # Our own codes' sentences: translated where their source marked them (`gettext_noop`).
    return words(title)


def resend_refusal(code: str, *, translated: bool = False) -> str:
    """Why a failed message with this code must not be sent again ("" when it may be), in
    English or `translated` as `explain`."""
    known = EXPLANATIONS.get(code)
    return _words(translated)(known.no_resend) if known is not None and known.no_resend else ""
