"""Why a message was not delivered, in the manager's words, and what each reason changes.

One table for every WhatsApp error code we explain (`EXPLANATIONS`); the message template, the
JSON API, the failure notice and the resend check all read it here. A Meta code we do not list
gets a generic sentence plus Meta's own title; our own codes (a send cancelled, a file not
kept) already carry a sentence written for the manager and are shown as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


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
        "This number is not on WhatsApp or cannot receive messages right now: the customer "
        "cannot be reached here. The assistant stops answering until the customer writes again.",
        no_resend="The customer cannot receive WhatsApp messages on this number: sending again "
        "will fail the same way. Wait until the customer writes, or reach them another way.",
    ),
    Code.OUTSIDE_WINDOW: Explanation(
        "More than 24 hours have passed since the customer last wrote: WhatsApp only lets a "
        "template message through until they write again.",
        no_resend="More than 24 hours have passed since the customer last wrote: only a "
        "template message can be sent now.",
    ),
    Code.ECOSYSTEM_LIMIT: Explanation(
        "WhatsApp held this message back: it limits how many marketing messages one person "
        "receives. Try again later or wait for the customer to write."
    ),
    Code.STOPPED_MARKETING: Explanation(
        "The customer asked WhatsApp to stop marketing messages from this business."
    ),
    Code.UNSUPPORTED_TYPE: Explanation("WhatsApp does not support this kind of message."),
    Code.MEDIA_DOWNLOAD: Explanation(
        "WhatsApp could not fetch the attached file. Send it again, or as another format."
    ),
    Code.MEDIA_UPLOAD: Explanation(
        "WhatsApp did not accept the attached file (its type or size). Send it in another format."
    ),
    Code.RATE_LIMIT: Explanation(
        "Too many messages were sent from this number in a short time. Send it again in a minute."
    ),
    Code.PAIR_RATE_LIMIT: Explanation(
        "Too many messages were sent to this customer in a short time. Send it again in a minute."
    ),
}

GENERIC_SENTENCE = "WhatsApp could not deliver this message."


def is_provider_code(code: str) -> bool:
    """WhatsApp's codes are numbers; ours ("cancelled", "storage", …) are words."""
    return code.isascii() and code.isdigit()


def explain(code: str, title: str) -> str:
    """The sentence shown under a failed message (plain text: the template escapes it)."""
    known = EXPLANATIONS.get(code)
    if known is not None:
        return known.text
    if is_provider_code(code) or not title:
        return f"{GENERIC_SENTENCE} WhatsApp says: {title}" if title else GENERIC_SENTENCE
    return title


def resend_refusal(code: str) -> str:
    """Why a failed message with this code must not be sent again ("" when it may be)."""
    known = EXPLANATIONS.get(code)
    return known.no_resend if known is not None else ""
