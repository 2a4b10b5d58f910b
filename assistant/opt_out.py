"""A customer's message that only says "stop writing to me": put them on the business's
opt-out register (`inbox.conversations.opt_outs`) and confirm it in their language, once for
that message and with nothing else (no prices, no questions).
"""

from __future__ import annotations

from assistant import language
from assistant.schema import Action, Decision
from inbox.conversations import opt_outs, turns
from inbox.conversations.models import OptOut

REASON = "opt_out"
CONFIRMATIONS = {
    "en": "You will not get further messages from us; write again any time.",
    "ru": "Мы больше не будем вам писать; напишите нам снова в любое время.",
    "kk": "Бұдан былай сізге хабарлама жібермейміз; кез келген уақытта қайта жаза аласыз.",
}


def confirmation(pending: turns.PendingTurn) -> Decision | None:
    """The confirmation to send when every pending message is an opt-out keyword (recording
    the opt-out); None when the customer said anything more."""
    chat = pending.chat
    business = chat.channel.business
    texts = [m.content for m in pending.messages]
    found = [opt_outs.keyword_language(business, text) for text in texts]
    if not texts or any(lang is None for lang in found):
        return None
    lang = next((code for code in found if code), "") or language.customer_language(
        texts, chat.channel.language or business.language
    )
    opt_outs.record(business.pk, chat.customer_key, OptOut.Source.KEYWORD, detail=" / ".join(texts))
    return Decision(
        action=Action.ANSWER,
        reason=REASON,
        reply_to_customer=CONFIRMATIONS.get(lang, CONFIRMATIONS["en"]),
    )
