"""What a customer's message is about, read with the conversation: which items, how many of
each, and at which price when a manager agreed one in this chat.

The catalogue assistant (`assistant.decision.catalogue`) decides from what this finds: the
answer to its own "which one?" (an option, an ordinal or a detail; the question expires when
the customer asks about something else), a follow-up that leans on the product named before
("and for 12?"), and an item a manager agreed a price for, which the customer's words then mean.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from assistant.decision.replies import is_text
from assistant.knowledge.agreements import Agreement, agreed_price
from assistant.knowledge.effective import Knowledge, KnowledgeItem
from assistant.knowledge.fees import ChildRate
from assistant.knowledge.matching import (
    MEASURE_WORDS,
    NOT_COUNTS,
    analyse,
    content_tokens,
    family_of,
    normalise,
    quantity_in,
    segments,
    stem,
    word_key,
    words,
)
from assistant.knowledge.rules import sentences as rule_sentences
from assistant.knowledge.rules import topics
from assistant.knowledge.transliteration import skeleton
from assistant.schema import HistoryEntry

# How far back a follow-up without a product ("and the price?") looks for what was discussed.
CONTEXT_ENTRIES = 6


# A follow-up that asks about price or stock without naming the product again.
PRICE_QUESTION = re.compile(
    r"price|how much|cost|in stock|available|total|цен|сколько|стоит|стоят|почем|налич|"
    r"итого|қанша|баға|бар ма"
)


ORDINALS: dict[str, int] = {
    "first": 0, "second": 1, "third": 2, "fourth": 3, "last": -1, "первый": 0, "первая": 0,
    "первое": 0, "первую": 0, "второй": 1, "вторая": 1, "второе": 1, "вторую": 1,
    "третий": 2, "третья": 2, "третье": 2, "третью": 2, "последний": -1, "последнюю": -1,
    "бірінші": 0, "екінші": 1, "үшінші": 2,
}  # fmt: skip


@dataclass(frozen=True)
class Quote:
    item: KnowledgeItem
    qty: Decimal  # in the item's own unit ("12.5" m², "30" bags)
    # The price a manager agreed for this item in this chat (None: the list price holds).
    agreed: Agreement | None = None
    # The least the list sells the item in, where the customer asked less or said no amount
    # ("Минимум 2 часа"): the line says so.
    least: Decimal | None = None
    # A child's line ("2 взрослых и ребёнок 8 лет"): the age and the rate the rules give it.
    child: tuple[int, ChildRate] | None = None

    @property
    def unit_price(self) -> Decimal:
        if self.agreed is None:
            return self.item.price
        _exact, minimum = agreed_quantity(self.agreed)
        # "21 000 за канистру при заказе от 10": a price per unit, not a total for ten.
        return self.agreed.amount.value if minimum else self.agreed.unit_price

    @property
    def total(self) -> Decimal:
        """The line's total: the amount a manager agreed for exactly this quantity as said
        ("95 000 за всех троих"), never a divided-and-multiplied 95 000.01; a child's at the
        rate the rules give."""
        if self.child is not None:
            rate = self.child[1].term
            return rate.applied(self.unit_price * self.qty) if rate is not None else Decimal(0)
        if self.agreed is not None and not self.agreed.per_unit:
            exact, _minimum = agreed_quantity(self.agreed)
            if exact and self.qty == exact:
                return self.agreed.amount.value
        return self.unit_price * self.qty


@dataclass(frozen=True)
class Found:
    quotes: list[Quote]
    ambiguous: list[KnowledgeItem]
    # Parts of the order counting something the list does not name ("фумленту 3 шт").
    unread: tuple[str, ...] = ()
    # One part named several items with no count ("the Charyn day trip"): no total of them.
    options: bool = False


# Payment words that look like a product ("by card" is not a greeting card).
PAYMENT_PHRASES = re.compile(
    r"\b(?:by|with|via) (?:credit |debit |bank )?card\b|\bcard payment\b|картой|карточкой|"
    r"по карте|на карту|банковская карта|картамен",
    re.IGNORECASE,
)


def asked_back(last_bot: HistoryEntry | None) -> bool:
    """Whether the bot's last message asked the customer back what they want: our "which
    product?", or any other question of the bot's that is not "which one?" or small talk."""
    if last_bot is None:
        return False
    if is_text(last_bot.text, "clarify.miss"):
        return True
    own = ("clarify.ambiguous", "answer.greeting", "answer.thanks")
    return last_bot.text.rstrip().endswith("?") and not any(is_text(last_bot.text, k) for k in own)


def find(query: str, knowledge: Knowledge) -> Found:
    """Clear matches with their own quantities, and the first ambiguous group (if any)."""
    query = PAYMENT_PHRASES.sub(" ", query)
    if not knowledge.items or not query.strip():
        return Found([], [])
    quotes: list[Quote] = []
    ambiguous: list[KnowledgeItem] = []
    lines, unread, options, _party = knowledge.catalogue.read_order(query)
    for group, qty in lines:
        if len(group) == 1:
            quotes.append(Quote(knowledge.items[group[0].index], qty))
        elif not ambiguous:
            ambiguous = [knowledge.items[m.index] for m in group]
    return Found(quotes, ambiguous, tuple(unread), options and len(quotes) > 1)


# A term the rules define, quoted: "— «кроссовер»", "count as \"SUV\"".
QUOTED_RE = re.compile(r"«([^»]{2,40})»|\"([^\"]{2,40})\"")


def with_rule_terms(message: str, rules: str, knowledge: Knowledge) -> str:
    """The message with the list's words the business rules define its unknown words by: where
    a clause of the rules puts a word of the customer's under a quoted term of the list ("рамные
    внедорожники (Land Cruiser Prado, …) — «внедорожник / минивэн»"), "у меня прадо" reads as
    "у меня прадо внедорожник минивэн". A word in several clauses defines nothing."""
    if not rules or not knowledge.items:
        return message
    catalogue = knowledge.catalogue
    clauses = [c for sentence in rule_sentences(rules) for c in sentence.split(";")]
    shapes = [
        {skeleton(w) for w in words(c) if len(w) >= 3} | {skeleton(stem(w)) for w in words(c)}
        for c in clauses
    ]
    added: list[str] = []
    for token in content_tokens(analyse(message)):
        if token.number is not None or len(token.word) < 4 or catalogue.match(token.word):
            continue
        shape = {skeleton(token.word), skeleton(token.stem)}
        holding = [n for n, found in enumerate(shapes) if shape & found]
        if len(holding) != 1:
            continue
        quoted = " ".join(a or b for a, b in QUOTED_RE.findall(clauses[holding[0]]))
        terms = [
            w
            for w in words(quoted)
            if w.isalpha() and len(w) >= 4 and word_key(w) in catalogue.name_words
        ]
        if 0 < len(set(terms)) <= 3:
            added += [t for t in dict.fromkeys(terms) if t not in added]
    return f"{message} {' '.join(added)}" if added else message


def find_in_context(
    message: str,
    history: list[HistoryEntry],
    last_bot: HistoryEntry | None,
    knowledge: Knowledge,
    leaning: bool = True,
) -> Found:
    """What the message is about, read with the conversation where it leans on it: the answer
    to "which one?", or "and the price?" after a product was named."""
    own = find(message, knowledge)
    options = options_asked(last_bot, knowledge)
    if last_bot is not None and options:
        # One question with the answer to "which one?": no sentence break between them.
        asked = re.sub(r"(?<!\d)[?!.]|[?!.](?!\d)", " ", last_customer_before(history, last_bot))
        # "first" is an answer to our own "which one?"; to another question only when it is
        # about all the message says ("the first one", not "actually first - do you take kids?").
        short = len(content_tokens(analyse(message))) <= 3
        own_question = is_text(last_bot.text, "clarify.ambiguous")
        picked = ordinal(message, options) if own_question or short else None
        picked = picked or option_named(message, options, knowledge)
        if picked is not None:
            return find(f"{asked} {picked.name}", knowledge)
        named = {q.item.key for q in own.quotes} | {i.key for i in own.ambiguous}
        within = named <= {i.key for i in options}
        # The clarifying question expires when the customer asks about something else.
        if within and not topics(message):
            glued = find(f"{asked} {message}".strip(), knowledge)
            if glued.quotes or glued.ambiguous:
                return glued
        return own
    if not leaning or own.quotes or own.ambiguous or not PRICE_QUESTION.search(normalise(message)):
        return own
    for entry in reversed(history[-CONTEXT_ENTRIES:]):
        if entry.speaker != "customer":
            continue
        earlier = find(entry.text, knowledge)
        resized = _resized(earlier, message, knowledge)
        if resized is not None:
            return resized
        if len(earlier.quotes) == 1 and not earlier.ambiguous:
            item = earlier.quotes[0].item
            measure = knowledge.catalogue.measures[knowledge.items.index(item)]
            in_unit = quantity_in(message, measure) if measure is not None else None
            count = in_unit or Decimal(bare_count(message))
            if count:
                return Found([Quote(item, count)], [])  # "and for 12?", "а 3 кг?"
        if earlier.quotes or earlier.ambiguous:
            return earlier
    return own


def option_named(
    message: str, options: list[KnowledgeItem], knowledge: Knowledge
) -> KnowledgeItem | None:
    """The one option of a "which one?" that the answer's words fit best ("12 мм", "с
    покрытием"), read among the options only; None on a tie, or when most of the message is
    about something else ("do you take kids? how much is a checkup": the question expired)."""
    indices = {knowledge.items.index(o) for o in options}
    fits = [m for m in knowledge.catalogue.match(message) if m.index in indices]
    if not fits:
        return None
    fits.sort(key=lambda m: (m.coverage, m.weight), reverse=True)
    best = fits[0]
    if len(fits) > 1 and (fits[1].coverage, fits[1].weight) >= (best.coverage, best.weight):
        return None
    tokens = analyse(message)
    said = {t.position for t in content_tokens(tokens)} | {
        t.position for t in tokens if t.number is not None
    }
    if len(said & (best.positions | best.number_positions)) * 2 < len(said):
        return None
    return knowledge.items[best.index]


def options_asked(last_bot: HistoryEntry | None, knowledge: Knowledge) -> list[KnowledgeItem]:
    """The items the bot's last message asked the customer to choose between: our own "which
    one?", or any question of the bot's (a manager's words in the bot's name, another
    assistant's) that names two or more items of the list ("9 мм — 5 200, 12 мм — 6 800. Какая
    толщина нужна?"). [] when it asked no such thing."""
    if last_bot is None:
        return []
    if is_text(last_bot.text, "clarify.ambiguous"):
        return [i for i in knowledge.items if i.name in last_bot.text]
    if "?" not in last_bot.text or not knowledge.items:
        return []
    named: list[KnowledgeItem] = []
    for group in knowledge.catalogue.resolve(last_bot.text):
        named += [knowledge.items[m.index] for m in group if m.by_sku or m.coverage >= 0.4]
    unique = list(dict.fromkeys(named))
    return unique if len(unique) >= 2 else []


def _resized(earlier: Found, message: str, knowledge: Knowledge) -> Found | None:
    """ "And the 2 kg one?" after the 8 kg bag: the item named before, in the size the
    message gives (its name without its own numbers, read with the message)."""
    if len(earlier.quotes) != 1 or not re.search(r"\d", message):
        return None
    item = earlier.quotes[0].item
    sibling = find(f"{re.sub(r'[0-9]+(?:[.,][0-9]+)?', ' ', item.name)} {message}", knowledge)
    if len(sibling.quotes) == 1 and sibling.quotes[0].item != item and not sibling.ambiguous:
        return sibling
    return None


def mostly_unknown(message: str, knowledge: Knowledge) -> bool:
    """The words around what fits match nothing in the list ("колодки на хюндай туксон",
    "outdoor chairs for a terrace"): what fits is only the general word, not the thing asked
    for."""
    unknown = set(knowledge.catalogue.unknown_words(message))
    for part in segments(message):
        tokens = analyse(part)
        for group, _qty in knowledge.catalogue.order_lines(part):
            near = {
                t.word
                for t in content_tokens(tokens)
                if t.word in unknown and min(abs(t.position - p) for p in group[0].positions) <= 3
            }
            if len(near) >= 2:
                return True
    return False


def bare_count(message: str) -> int:
    """The one count a message gives without naming a product ("а если 12 канистр?")."""
    tokens = analyse(message)
    counts = [t for t in tokens if t.number is not None and 1 < t.number < 1000]
    if len(counts) != 1:
        return 0
    after = next((t for t in tokens if t.position == counts[0].position + 1), None)
    if after is not None and (
        after.word in MEASURE_WORDS or (family_of(after.word) or (None,))[0] in NOT_COUNTS
    ):
        return 0  # "2-килограммовый", "3 месяца": a size or a time, not how many
    return counts[0].number or 0


def ordinal(message: str, options: list[KnowledgeItem]) -> KnowledgeItem | None:
    if not options:
        return None
    for word in re.findall(r"\w+", normalise(message)):
        if word in ORDINALS:
            index = ORDINALS[word]
            if -len(options) <= index < len(options):
                return options[index]
    return None


def about_agreed(
    found: Found, message: str, agreed: list[Agreement], knowledge: Knowledge
) -> Found:
    """An item a manager agreed a price for in this chat is the one the customer means when
    their words fit it ("the office chair" after the executive chair was agreed)."""
    items = {a.item_index for a in agreed if a.item_index is not None}
    if len(items) != 1:
        return found
    index = items.pop()
    item = knowledge.items[index]
    if item in [q.item for q in found.quotes]:
        return found
    if index not in {m.index for m in knowledge.catalogue.match(message)}:
        return found
    if found.ambiguous and item in found.ambiguous:
        # "ок тогда газель на 4 часа": the agreed one of the two, as many as asked.
        lines = knowledge.catalogue.order_lines(message)
        qty = next((q for group, q in lines if index in {m.index for m in group}), Decimal(1))
        return Found([*found.quotes, Quote(item, qty)], [])
    if len(found.quotes) == 1 and not found.ambiguous:
        return Found([Quote(item, found.quotes[0].qty)], [])
    return found


def with_agreement(quote: Quote, found: list[Agreement], knowledge: Knowledge) -> Quote:
    """The quote at the price a manager agreed in this chat, else at the list price and no
    less than the least quantity the list sells the item in."""
    index = knowledge.items.index(quote.item)
    agreed = agreed_price(found, index)
    if agreed is None:
        least = knowledge.catalogue.minimums[index]
        if least is None or quote.qty >= least:
            return quote
        # "на 2 часа" of a 4-hour minimum is 4 hours; no amount said is the unit price.
        return Quote(quote.item, quote.qty if quote.qty == 1 else least, least=least)
    qty = quote.qty
    exact, minimum = agreed_quantity(agreed)
    if qty == 1 and (exact or minimum):
        qty = Decimal(exact or minimum)  # "how much then?" about the manager's offer for N
    return Quote(quote.item, qty, agreed)


def agreed_quantity(agreed: Agreement) -> tuple[int, int]:
    """(exact, minimum) quantity the manager's price was given for; 0 when none."""
    if not agreed.quantity or agreed.quantity <= 1:
        return 0, 0
    if re.search(
        rf"(?:от|from|at least|min\w*|не менее|кемінде)\s*{agreed.quantity}", agreed.words
    ):
        return 0, agreed.quantity
    return agreed.quantity, 0


def agreed_for_another_quantity(quote: Quote) -> bool:
    if quote.agreed is None:
        return False
    exact, minimum = agreed_quantity(quote.agreed)
    return bool((exact and quote.qty != exact) or (minimum and quote.qty < minimum))


def last_bot_message(history: list[HistoryEntry]) -> HistoryEntry | None:
    for entry in reversed(history):
        if entry.speaker in ("bot", "manager"):
            return entry if entry.speaker == "bot" else None
    return None


def last_customer_before(history: list[HistoryEntry], bot: HistoryEntry) -> str:
    index = history.index(bot)
    texts: list[str] = []
    for entry in reversed(history[:index]):
        if entry.speaker != "customer":
            break
        texts.insert(0, entry.text)
    return " ".join(texts)
