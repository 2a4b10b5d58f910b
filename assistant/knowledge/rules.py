"""Answers written in the business rules: which sentence of the assistant settings' text answers
a customer's question about delivery, assembly, installation, opening hours, payment, warranty,
returns, pickup or the address.

    found = rule_answer("how much is delivery within Almaty?", settings.business_rules)
    found.sentences   # ("Delivery in Almaty takes 1-2 days and costs 3 000 KZT; ...",)

The sentences are quoted as written (their amounts are the business's own, so nothing is
computed). A question on a topic the rules do not cover gets no answer, and neither does one
about a place the matching sentences do not serve ("deliver to Astana?" when the rule is about
Almaty). The same reading finds what a manager wrote on the topic in this chat, which wins over
the rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from assistant import language
from assistant.knowledge.matching import normalise

# topic → a pattern that finds it in a question and in a rule sentence
TOPICS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.IGNORECASE)
    for name, pattern in {
        "delivery": r"deliver|shipping|\bship\b|courier|доставк|доставит|доставля|доставим|"
        r"привез|привоз|курьер|жеткіз|жеткізу",
        "assembly": r"assembl|put (?:it )?together|сборк|собрат|собер|сборщик|құрастыр",
        "installation": r"install|\bfit(?:ting)? (?:the|it)|установ|монтаж|орнат",
        "hours": r"\bopen\b|opening|hours|what time|\bclose[sd]?\b|closing|schedule|weekend|"
        r"sunday|saturday|график|часы работы|режим работы|работаем|"
        r"(?:когда|сегодня|завтра|в выходные|в субботу|в воскресенье)\W+(?:\w+\W+){0,2}работает|"
        r"работае\w*\W+(?:\w+\W+){0,2}(?:до скольки|во сколько|сегодня|завтра|в выходные|"
        r"в субботу|в воскресенье|ежедневно)|"
        r"до скольки|во сколько|выходн|ежедневно|без выходных|\bпн\b|жұмыс (?:уақыт|істей)|"
        r"нешеге",
        "payment": r"pay (?:by|with|in|via)|payment method|\bcash\b|\bcard\b|kaspi|каспи|"
        r"transfer|оплат|картой|карточк|наличн|перевод|төлем|төлеу",
        "warranty": r"warrant|guarantee|гаранти|кепілдік",
        "returns": r"return polic|exchange|обмен|возврат",
        "pickup": r"pick ?up|self-collect|collect it|самовывоз|забрать сам|өзім алып",
        "address": r"address|where are you|located|location|адрес|где вы|находитесь|"
        r"мекенжай|қайда орналас",
    }.items()
}

# Places the rules may name; a question about one the sentences do not mention is not answered.
PLACES: dict[str, str] = {
    "almaty": "almaty", "алматы": "almaty", "алма-ата": "almaty", "astana": "astana",
    "астана": "astana", "shymkent": "shymkent", "шымкент": "shymkent",
    "karaganda": "karaganda", "караганда": "karaganda", "қарағанды": "karaganda",
    "aktobe": "aktobe", "актобе": "aktobe", "ақтөбе": "aktobe", "atyrau": "atyrau",
    "атырау": "atyrau", "pavlodar": "pavlodar", "павлодар": "pavlodar", "kostanay": "kostanay",
    "костанай": "kostanay", "taraz": "taraz", "тараз": "taraz", "semey": "semey",
    "семей": "semey", "moscow": "moscow", "москва": "moscow", "москве": "moscow",
    "bishkek": "bishkek", "бишкек": "bishkek", "tashkent": "tashkent", "ташкент": "tashkent",
}  # fmt: skip
_PLACE_RE = re.compile(
    r"(?<!\w)(" + "|".join(sorted(map(re.escape, PLACES), key=len, reverse=True)) + r")\w{0,3}",
    re.IGNORECASE,
)
MAX_SENTENCES = 2


@dataclass(frozen=True)
class RuleAnswer:
    topics: frozenset[str]
    sentences: tuple[str, ...]


def topics(text: str) -> frozenset[str]:
    """The rule topics a text is about."""
    low = normalise(text)
    return frozenset(name for name, pattern in TOPICS.items() if pattern.search(low))


def places(text: str) -> frozenset[str]:
    return frozenset(PLACES[m.group(1).lower()] for m in _PLACE_RE.finditer(normalise(text)))


def sentences(text: str) -> list[str]:
    """The rules text, sentence by sentence (amounts such as "1.5" and "3 000" stay whole)."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-ZА-ЯЁӘҒҚҢӨҰҮҺІ0-9])|\n+", text or "")
    return [" ".join(p.split()) for p in parts if p.strip()]


def rule_answer(question: str, rules: str, said: Iterable[str] = ()) -> RuleAnswer | None:
    """The sentences that answer a question about the business's terms, or None.

    `said` are sentences a manager wrote in this chat: when they cover the asked topic they are
    the answer, not the rules (a promise made to this customer wins over the general text)."""
    asked = topics(question)
    if not asked:
        return None
    for source in (list(said), sentences(rules)):
        chosen = _answering(question, asked, source)
        if chosen:
            return RuleAnswer(asked, tuple(chosen))
    return None


def _answering(question: str, asked: frozenset[str], source: Sequence[str]) -> list[str]:
    candidates = [s for s in source if topics(s) & asked]
    wanted_places = places(question)
    if wanted_places:
        # A sentence naming other places does not answer for this one ("Astana" vs "Almaty").
        candidates = [s for s in candidates if not places(s) or places(s) & wanted_places]
    if not candidates:
        return []
    # Prefer the sentences in the customer's script when the rules are written in both.
    script = language.detect(question)
    same = [s for s in candidates if language.detect(s) == script]
    chosen = same or candidates
    # Most topics in common first; the rules' own order otherwise.
    chosen = sorted(chosen, key=lambda s: -len(topics(s) & asked))
    return chosen[:MAX_SENTENCES]
