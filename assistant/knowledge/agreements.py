"""What a manager gave this customer in the chat, binding after the chat goes back to the bot.

A manager who writes "the office chair is 60 000 KZT instead of 69 000" has made a promise.
When the bot answers again it must use that price (or hand off), never quote the list's 69 000.

    for agreed in agreements(turn.history, knowledge):
        agreed.item_index   # the price-list item it binds to (None: the words name none)
        agreed.unit_price   # the agreed price of one unit
        agreed.quantity     # the quantity it was given for, when the manager said one
        agreed.words        # the manager's sentence, as written

Only a manager's own messages count (never the customer's "you said 40k"). An amount written
as the old price ("instead of 69 000", "вместо 69 000", "не 69 000, а …") is not agreed. The
item is the one the sentence names; a sentence that names none refers to the item named just
before it (an earlier sentence of the manager, else the customer's message before).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from assistant.knowledge.effective import Knowledge
from assistant.knowledge.matching import NUMBER_WORDS
from assistant.knowledge.money import Amount, find_amounts
from assistant.schema import HistoryEntry

# Words right before an amount that make it the price being replaced, not the agreed one.
OLD_PRICE_RE = re.compile(
    r"(?<!\w)(?:instead of|rather than|not|from|was|вместо|не|было|был[аи]?|орнына|емес)"
    r"\s*[:—-]?\s*$",
    re.IGNORECASE,
)
# Words right after an amount that make it the old price ("69 000 → 60 000" keeps the second).
OLD_PRICE_AFTER_RE = re.compile(r"^\s*(?:→|->|=>)", re.IGNORECASE)
EACH_RE = re.compile(
    r"\b(?:each|apiece|per (?:item|piece|unit|chair|one|person|head)|a piece|a head|за штуку|"
    r"за шт\b|за единицу|за каждый|за каждую|каждый|каждая|каждое|каждого|каждой|каждому|"
    r"за человека|с человека|на человека|на каждого|данасы|әрқайсы)|(?<!\w)по \d"
    # Kazakh "40 000 тг-дан": at that much each
    r"|(?:\d|тг|тенге|₸)\s*-?\s*(?:дан|ден|тан|тен)\b",
    re.IGNORECASE,
)
QUANTITY_RE = re.compile(
    r"(?<![\d.,])(\d{1,3})\s*(?:x\b|×|шт\b|pcs\b|штук\w*|дана\b)"
    r"|(?<![\d.,\w])(\d{1,3})\s+(?!(?:cm|mm|m|kg|см|мм|м|кг|л|l)\b)(?=[a-zа-яёәғқңөұүһі])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Agreement:
    words: str
    amount: Amount
    item_index: int | None
    quantity: int | None
    per_unit: bool

    @property
    def unit_price(self) -> Decimal:
        """The price of one unit: a total given for N units is divided by N."""
        if self.per_unit or not self.quantity or self.quantity <= 1:
            return self.amount.value
        return (self.amount.value / self.quantity).quantize(Decimal("0.01"))


def agreements(history: Sequence[HistoryEntry], knowledge: Knowledge) -> list[Agreement]:
    """Every price a manager agreed in this chat, oldest first (a later one for the same item
    is the one that holds: see `agreed_price`)."""
    found: list[Agreement] = []
    context: int | None = None  # the item the conversation was last about
    for entry in history:
        if entry.speaker == "customer":
            named = _single_item(entry.text, knowledge)
            context = named if named is not None else context
            continue
        if entry.speaker != "manager":
            continue
        for sentence in (c for s in _sentences(entry.text) for c in _clauses(s, knowledge)):
            named = _single_item(sentence, knowledge)
            item = named if named is not None else context
            context = item
            for amount in _agreed_amounts(sentence, knowledge, item):
                name = knowledge.items[item].name if item is not None else ""
                quantity = _quantity(sentence, name)
                per_unit = bool(EACH_RE.search(sentence)) or quantity is None
                found.append(Agreement(sentence.strip(), amount, item, quantity, per_unit))
    return found


def agreed_price(found: Sequence[Agreement], item_index: int) -> Agreement | None:
    """The agreement that holds for an item now: the manager's latest for it."""
    for agreement in reversed(found):
        if agreement.item_index == item_index:
            return agreement
    return None


def manager_statements(history: Sequence[HistoryEntry]) -> list[str]:
    """What managers wrote in this chat, sentence by sentence, for a model's prompt."""
    statements: list[str] = []
    for entry in history:
        if entry.speaker == "manager":
            statements += [s.strip() for s in _sentences(entry.text) if s.strip()]
    return list(dict.fromkeys(statements))


def _sentences(text: str) -> list[str]:
    # Keep decimal and grouped numbers whole ("1.5 млн", "60.000"): split only on a mark
    # followed by a space or the end.
    parts = re.split(r"(?<=[.!?;])\s+|\n+", text)
    return [p for p in parts if p.strip()]


def _clauses(sentence: str, knowledge: Knowledge) -> list[str]:
    """A sentence that prices several items ("Пианино — 30 000, сейф — 20 000"), clause by
    clause, so each amount binds to its own item; any other sentence whole."""
    if not knowledge.items or len(find_amounts(sentence)) < 2:
        return [sentence]
    parts = [p for p in re.split(r"[,;]\s+|\s(?:и|and|және|а)\s", sentence) if p.strip()]
    priced = [p for p in parts if find_amounts(p) and _single_item(p, knowledge) is not None]
    return parts if len(priced) >= 2 else [sentence]


def _single_item(text: str, knowledge: Knowledge) -> int | None:
    if not knowledge.items:
        return None
    clear = [group[0].index for group in knowledge.catalogue.resolve(text) if len(group) == 1]
    return clear[0] if len(clear) == 1 else None


def _agreed_amounts(sentence: str, knowledge: Knowledge, item: int | None) -> list[Amount]:
    amounts = find_amounts(sentence)
    kept = [
        a
        for a in amounts
        if not OLD_PRICE_RE.search(sentence[: a.start])
        and not OLD_PRICE_AFTER_RE.match(sentence[a.start + len(a.text) :])
    ]
    if item is not None and len(kept) > 1:
        # "60 000 (list 69 000)": the list price itself is not what was agreed.
        listed = knowledge.items[item].price
        kept = [a for a in kept if a.value != listed] or kept
    return kept


def _quantity(sentence: str, item_name: str) -> int | None:
    """A quantity the sentence gives outside its amounts ("2 chairs for 120 000"; the "500" of
    "instead of 3 500 KZT" is not one); a number of the item's own name ("table 160") is not
    one either."""
    masked = sentence
    for found in find_amounts(sentence):
        masked = masked[: found.start] + " " * (found.end - found.start) + masked[found.end :]
    in_name = set(re.findall(r"\d+", item_name))
    for match in QUANTITY_RE.finditer(masked):
        raw = match.group(1) or match.group(2)
        value = int(raw)
        if 1 < value <= 1000 and raw not in in_name:
            return value
    for word in re.findall(r"\w+", masked.lower()):
        if word in NUMBER_WORDS and NUMBER_WORDS[word] > 1:
            return NUMBER_WORDS[word]
    return None
