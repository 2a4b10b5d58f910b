"""Promises only a manager makes: agreeing to terms the customer asked for and the rules do not
give (a discount, a custom price, a deadline, free terms: "I can do that", "договорились",
"келістік"), promising a discount, free delivery or a special price unasked, closing a deal,
and the business's own forbidden promises (`AssistantSettings.promises()`; "re:" starts a
regex). "Free delivery" passes only where the rules make the same thing free and the order
reaches their threshold."""

from __future__ import annotations

import re
from decimal import Decimal

from django.utils.translation import gettext, gettext_noop

from assistant.decision.guardrails.finding import Finding
from assistant.decision.guardrails.items import items_named, mask_codes, stated_quantities
from assistant.decision.guardrails.sentences import sentence_text
from assistant.decision.guardrails.terms import DISCOUNT_WORDS, dates, deadlines
from assistant.knowledge.effective import Knowledge
from assistant.knowledge.matching import stem, words
from assistant.knowledge.money import find_amounts, format_money
from assistant.models import AssistantSettings
from assistant.schema import TurnInput

# What a customer asks for that only a manager can give.
ASKS_DISCOUNT = re.compile(
    r"скидк|discount|cheaper|дешевле|подешевле|уступ|торг|жеңілдік|арзан|lower (?:the )?price|"
    r"best price|special price|особ\w* цен|спец\w* цен|reduce|knock|deal\b|bargain|sale\b",
    re.IGNORECASE,
)
ASKS_FREE = re.compile(
    r"\bfree\b|бесплатн|даром|тегін|no charge|for nothing|без оплаты", re.IGNORECASE
)
ASKS_DEADLINE = re.compile(
    r"\b(?:tomorrow|today|tonight|завтра|сегодня|послезавтра|ертең|бүгін)\b|"
    r"urgent|asap|as soon as|срочно|побыстрее|быстрее|шұғыл|тез арада|by (?:the )?\d|"
    r"by (?:tomorrow|tonight|today|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"к (?:завтра|понедельник|вторник|среде|четвергу|пятнице|субботе|воскресенью)|"
    r"до (?:завтра|понедельника|вторника|среды|четверга|пятницы|субботы|воскресенья)",
    re.IGNORECASE,
)
ASKS_PRICE_FOR = re.compile(
    r"\bfor\b|\bat\b|\bза\b|отдадите|отдашь|сделаете|уступите|would you take|can you do|"
    r"could you do|if i take|если возьму|беремін|алсам",
    re.IGNORECASE,
)
# The reply saying yes to it. Strong forms agree whatever follows; "sure/да/иә" at the start of
# a reply agree when the customer asked for terms and the reply neither refuses nor defers.
AGREES = re.compile(
    r"\b(?:i|we) can do (?:that|it|this)\b|\bcan do\b|\b(?:it'?s a )?deal\b|(?<!as )\bagreed\b|"
    r"\byou(?:'ve)? got it\b|\bno problem\b|\bwe'?ll (?:do|make) (?:it|that)\b|"
    r"\b(?:i|we) (?:can|will|'ll) (?:give|offer|make|do) (?:you )?(?:a |an |the )?"
    r"(?:discount|special price|better price|price of|it for|them for)|"
    r"\bfor you\b[^.!?\n]{0,20}\b(?:only|special)|"
    r"(?<!как )(?<!как мы )(?<!уже )договорились|по рукам|\bидёт\b|\bидет\b|без проблем|"
    r"сделаем(?! заказ)|можем сделать|"
    r"можем (?:дать|предложить|уступить|отдать)|отдадим|уступим|дадим скидку|"
    r"предоставим скидку|согласн\w*|"
    r"келістік|келісемін|жасаймыз|жасай аламыз|береміз|болады|мақұл",
    re.IGNORECASE,
)
# Closing a deal is a manager's word whatever was asked.
CLOSES = re.compile(
    r"(?<!как )(?<!как мы )(?<!уже )договорились|по рукам|келістік|\bit'?s a deal\b", re.IGNORECASE
)
WEAK_YES = re.compile(
    r"^\W*(?:yes|yeah|yep|sure|of course|ok|okay|certainly|absolutely|да|конечно|хорошо|ладно|"
    r"разумеется|иә|әрине|жарайды|жақсы)\b",
    re.IGNORECASE,
)
REFUSES = re.compile(
    r"can'?t|cannot|can not|unable|not able|unfortunately|sorry|not possible|won'?t|fixed|"
    r"only (?:at )?the list|к сожалению|не можем|не могу|не получится|нет возможности|"
    r"невозможно|не предусмотрен|фиксирован|өкінішке|мүмкін емес|алмаймыз|болмайды|жоқ",
    re.IGNORECASE,
)
DEFERS = re.compile(
    r"manager|colleague|менеджер|коллег|передам|передал|уточн|менеджерге|маман|"
    r"check with|ask (?:our|the|a)",
    re.IGNORECASE,
)
# Promises that need no question to be promises: a discount, free delivery, a special price.
PROMISES = (
    (gettext_noop("a discount"), re.compile(
        r"(?:give|offer|make|do|get)\s+(?:you\s+)?(?:a\s+)?(?:\d+\s*%\s*)?discount|"
        r"discount for you|сделаем\s+(?:вам\s+)?скидк|дадим\s+(?:вам\s+)?скидк|"
        r"предоставим\s+(?:вам\s+)?скидк|скидк\w* для вас|со скидкой|"
        r"жеңілдік\s+(?:жасаймыз|береміз|жасай аламыз)", re.IGNORECASE), DISCOUNT_WORDS),
    (gettext_noop("free delivery"), re.compile(
        r"free (?:delivery|shipping|assembly|installation)|(?:deliver|ship)\w* (?:it |them )?"
        r"(?:for )?free|бесплатн\w* (?:доставк|сборк|установк)|(?:доставим|соберем|соберём|"
        r"привезем|привезём) бесплатно|тегін жеткіз|жеткізу тегін|at no (?:extra )?cost|"
        r"for free|бесплатн\w*|тегін|(?<!feel )\bfree\b(?! to\b)", re.IGNORECASE), ASKS_FREE),
    (gettext_noop("a price cut"), re.compile(
        r"half price|half off|50/50|two for one|2 for 1|buy one,? get one|полцены|"
        r"пол цены|за полцены|два по цене одного|1\+1|жарты бағасына|екеуі бірдің бағасына",
        re.IGNORECASE), re.compile(r"half|полцен|1\+1|жарты", re.IGNORECASE)),
    (gettext_noop("a special price"), re.compile(
        r"special price|price just for you|особ\w* цен|спец\w* цен|персональн\w* цен|"
        r"только для вас|арнайы баға", re.IGNORECASE),
        re.compile(r"special|особ|спец|арнайы", re.IGNORECASE)),
)  # fmt: skip


def promised_terms(
    reply: str, turn: TurnInput, knowledge: Knowledge, rules: str, managers: list[str]
) -> list[Finding]:
    """Agreeing to terms the rules do not give, whether or not a number is written."""
    result = []
    for label, pattern, allowed_by in PROMISES:
        for match in pattern.finditer(reply):
            if _negated(reply, match.start()):
                continue
            if label == "free delivery":
                # A manager may have given it in this chat ("доставка для вас бесплатно").
                refused = _free_refused(
                    reply, match, turn, knowledge, "\n".join([rules, *managers])
                )
                if refused:
                    result.append(Finding("promise", refused))
                    break
                continue
            if any(allowed_by.search(c) for c in _granting_clauses(rules)) or any(
                pattern.search(m) for m in managers
            ):
                continue
            result.append(
                Finding(
                    "promise",
                    gettext("promises %(what)s: '%(said)s'")
                    % {"what": gettext(label), "said": match.group(0).strip()},
                )
            )
            break
    closing = CLOSES.search(reply)
    if closing and not _negated(reply, closing.start()):
        result.append(
            Finding(
                "promise",
                gettext("closes a deal: '%(said)s'") % {"said": closing.group(0).strip()},
            )
        )
    asked = _asked_terms(turn, knowledge, rules)
    if not asked:
        return result
    refuses = REFUSES.search(reply)
    for match in AGREES.finditer(reply):
        if not _negated(reply, match.start()):
            result.append(Finding("promise", _agrees(asked, match)))
            return result
    weak = WEAK_YES.search(reply)
    if weak and not refuses and not DEFERS.search(reply):
        result.append(Finding("promise", _agrees(asked, weak)))
    return result


def _agrees(asked: str, match: re.Match[str]) -> str:
    return gettext("agrees to %(asked)s: '%(said)s'") % {
        "asked": asked,
        "said": match.group(0).strip(),
    }


FREE_WORDS = re.compile(r"\bfree\b|бесплатн|тегін|no charge|at no (?:extra )?cost", re.I)
_SUBJECTS = (
    (gettext_noop("assembly"), re.compile(r"assembl|сборк|собер|соберём|құрастыр", re.IGNORECASE)),
    (gettext_noop("installation"), re.compile(r"install|установ|монтаж|орнат", re.IGNORECASE)),
    (
        gettext_noop("delivery"),
        re.compile(r"deliver|shipping|ship\b|доставк|доставим|привез|жеткіз", re.I),
    ),
)
_FROM = re.compile(r"(?:from|over|above|at least|от|свыше|более|бастап)\s*$", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:no|not|none|нет|не|без|жоқ|емес)\b", re.IGNORECASE)


def _clauses(text: str) -> list[str]:
    return [c for c in re.split(r"[.;\n]+", text) if c.strip()]


def _granting_clauses(rules: str) -> list[str]:
    """Clauses of the rules that give something ("скидка 5% от 3 предметов"), not the ones that
    deny it ("Других скидок нет", "No other discounts")."""
    return [c for c in _clauses(rules) if not _NEGATION.search(c)]


def _subject(text: str) -> str:
    return next((name for name, pattern in _SUBJECTS if pattern.search(text)), "")


def _free_refused(
    reply: str, match: re.Match[str], turn: TurnInput, knowledge: Knowledge, rules: str
) -> str:
    """Why a "free …" in the reply is not what the rules give ("" when it is): the rules must
    make the same thing free, and the order must reach the rules' threshold ("free for orders
    from 300 000 KZT")."""
    sentence = sentence_text(reply, match.start())
    subject = _subject(match.group(0)) or _subject(sentence)
    said = match.group(0).strip()
    lowest: Decimal | None = None
    for clause in _granting_clauses(rules):
        if not FREE_WORDS.search(clause) or _subject(clause) != subject:
            continue
        if not subject and not {stem(w) for w in words(sentence) if len(w) > 3} & {
            stem(w) for w in words(clause) if len(w) > 3
        }:
            continue
        thresholds = [a.value for a in find_amounts(clause) if _FROM.search(clause[: a.start])]
        if not thresholds or _order_value(reply, turn, knowledge) >= min(thresholds):
            return ""
        lowest = min(thresholds) if lowest is None else min(lowest, *thresholds)
    if lowest is not None:
        shown = format_money(lowest, knowledge.default_currency)
        return gettext(
            "promises %(subject)s free: '%(said)s' (the rules give it from %(price)s)"
        ) % {
            "subject": gettext(subject) if subject else gettext("it"),
            "said": said,
            "price": shown,
        }
    return gettext("promises free %(subject)s: '%(said)s'") % {
        "subject": gettext(subject) if subject else gettext("terms"),
        "said": said,
    }


def _order_value(reply: str, turn: TurnInput, knowledge: Knowledge) -> Decimal:
    """What the order is worth: the largest amount the reply writes, else the customer's
    items at their quantities."""
    amounts = [a.value for a in find_amounts(mask_codes(reply, knowledge))]
    if amounts:
        return max(amounts)
    customer = [e.text for e in [*turn.history, *turn.pending] if e.speaker == "customer"]
    stated = stated_quantities(knowledge, customer)
    return sum((knowledge.items[i].price * max(q) for i, q in stated.items()), Decimal(0))


def _asked_terms(turn: TurnInput, knowledge: Knowledge, rules: str) -> str:
    """What the customer's latest messages ask for beyond the list and the rules."""
    text = "\n".join(e.text for e in turn.pending if e.speaker == "customer")
    if not text.strip():
        return ""
    if ASKS_DISCOUNT.search(text):
        return gettext("a discount the rules do not give")
    if ASKS_FREE.search(text) and not any(FREE_WORDS.search(c) for c in _granting_clauses(rules)):
        return gettext("free terms the rules do not give")
    named = items_named(knowledge, text)
    prices = {i.price for n, i in enumerate(knowledge.items) if not named or n in named}
    if not named:
        prices |= {a.value for a in find_amounts(rules)}
    custom = [a for a in find_amounts(mask_codes(text, knowledge)) if a.value not in prices]
    if custom and ASKS_PRICE_FOR.search(text):
        return gettext("the customer's price %(price)s") % {
            "price": format_money(custom[0].value, custom[0].currency)
        }
    asked_deadline = [c for c, _ in deadlines(text)] + [c for c, _ in dates(text)]
    written = "\n".join([rules, *(i.name for i in knowledge.items)])
    allowed = {c for c, _ in deadlines(written)} | {c for c, _ in dates(written)}
    if (asked_deadline and not set(asked_deadline) <= allowed) or ASKS_DEADLINE.search(text):
        return gettext("the customer's deadline")
    return ""


def _negated(text: str, position: int) -> bool:
    before = text[max(0, position - 25) : position].lower()
    return (
        re.search(r"\b(?:not|no|never|нет|не|емес|жоқ)\s+(?:\w+\s+)?$|n't\s+(?:\w+\s+)?$", before)
        is not None
    )


# --- forbidden promises ---------------------------------------------------------------------


def forbidden_promises(reply: str, config: AssistantSettings) -> list[Finding]:
    text = _normalise(reply)
    result = []
    for promise in config.promises():
        if promise.lower().startswith("re:"):
            try:
                hit = re.search(promise[3:].strip(), reply, re.IGNORECASE) is not None
            except re.error:
                hit = False
        else:
            needle = _normalise(promise)
            hit = bool(needle) and re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", text) is not None
        if hit:
            result.append(
                Finding(
                    "promise", gettext("forbidden promise: '%(promise)s'") % {"promise": promise}
                )
            )
    return result


def _normalise(text: str) -> str:
    return " ".join(text.lower().replace("ё", "е").split())
