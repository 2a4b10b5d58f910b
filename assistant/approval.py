"""Which bot replies wait for a person before they go out (the channel's `approval`).

`amounts` holds a reply that states an amount, a date, a deadline, a clock time or a promise,
read with the same readers the guardrails use (`assistant.knowledge.money.find_amounts`,
`assistant.decision.guardrails.terms`, the promise patterns of `guardrails.promises`), whether
or not the rules back it: a person wanted to see every commitment. `all` holds every reply;
`off` none. The one exception is the confirmation of an opt-out ("STOP"): the law wants it now.
A handoff's fixed notice to the customer ("a manager will reply shortly") is not a reply and
never waits either.
"""

from __future__ import annotations

from assistant import opt_out
from assistant.decision import replies
from assistant.decision.guardrails import promises, terms
from assistant.knowledge.money import find_amounts, find_percentages
from inbox.conversations.models import Approval, Channel


def commitments(reply: str) -> list[str]:
    """What the reply commits the business to, in the manager's words (empty: nothing)."""
    found = [f"amount '{a.text}'" for a in find_amounts(reply)]
    found += [f"percentage '{p.text}'" for p in find_percentages(reply)]
    found += [f"deadline '{written}'" for _, written in terms.deadlines(reply)]
    found += [f"date '{written}'" for _, written in terms.dates(reply)]
    found += [f"time '{written}'" for _, written in terms.times(reply)]
    for label, pattern, _ in promises.PROMISES:
        match = pattern.search(reply)
        if match:
            found.append(f"promises {label}: '{match.group(0).strip()}'")
    for pattern in (promises.CLOSES, promises.AGREES):
        match = pattern.search(reply)
        if match:
            found.append(f"agrees: '{match.group(0).strip()}'")
            break
    return found


def held_because(channel: Channel, reply: str, reason: str = "") -> str:
    """Why this reply waits for a person on this channel; empty when it may go out now.
    `reason` is the decision's reason code (an opt-out's confirmation never waits)."""
    if channel.approval == Approval.OFF or reason == opt_out.REASON:
        return ""
    if channel.approval == Approval.ALL:
        return "every reply is approved on this channel"
    found = commitments(reply)
    return "; ".join(found)


def timeout_notice(channel: Channel) -> str:
    """What the customer reads when no one approved the reply in time."""
    lang = channel.language or channel.business.language or "en"
    return replies.text("handoff.approval_timeout", lang)
