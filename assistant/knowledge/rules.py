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

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from assistant import language
from assistant.knowledge.matching import family_of, is_stopword, normalise, stem, word_key, words
from assistant.knowledge.matching.units import CONTAINERS
from assistant.knowledge.money import Amount, find_amounts
from assistant.knowledge.transliteration import skeleton

# topic → a pattern that finds it in a question and in a rule sentence
TOPICS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.IGNORECASE)
    for name, pattern in {
        "delivery": r"deliver|shipping|\bship\b|courier|доставк|доставит|доставля|доставим|"
        r"привез|привоз|курьер|отправ|в регион|other cities|другие города|жеткіз|жеткізу",
        "assembly": r"assembl|put (?:it )?together|сборк|собрат|собер|сборщик|құрастыр",
        "installation": r"install|\bfit(?:ting)? (?:the|it)|mount|\bhang\b|установ|монтаж|орнат|"
        r"повес|поставить|поставите|поставят",
        "hours": r"\bopen\b|opening (?:hours|time)|hours|what time|"
        r"открыт(?:ы|о|а)?\b|закрыт(?:ы|о|а)?\b|"
        r"\bclose[sd]?\b|closing|"
        r"schedule|weekend|"
        r"sunday|saturday|weekends?|воскресень|суббот|по выходным|график|часы работы|режим работы|"
        r"работаем|"
        r"(?:когда|сегодня|завтра|в выходные|в субботу|в воскресенье)\W+(?:\w+\W+){0,2}работает|"
        r"работае\w*\W+(?:\w+\W+){0,2}(?:до скольки|во сколько|сегодня|завтра|в выходные|"
        r"в субботу|в воскресенье|ежедневно)|"
        r"до скольки|во сколько(?! (?:\w+ )?(?:обойд|выйд|будет стоить|стоит|встанет))|выходн|"
        r"ежедневно|без выходных|\bпн\b|жұмыс (?:уақыт|істей)|"
        r"нешеге",
        "payment": r"pay (?:by|with|in|via)|payment method|\bcash\b|\bcard\b|kaspi|каспи|"
        r"transfer|оплат|оплач|картой|карточк|наличн|перевод|төлем|төлеу|рассрочк|install?ments?|"
        r"\bcredit\b|кредит|бөліп төле|0-0-\d+|безнал|юрлиц|юридическ|bank transfer|wire|"
        r"\binvoice|legal entit|company account",
        "discounts": r"discount|скидк|скидоч|жеңілдік|\bакци[яиюй]|\bsale\b|% off",
        "duration": r"how long|how many days|сколько (?:дней|времени|по времени)|"
        r"за сколько (?:дней|времени)|какой срок|в какой срок|сроки|қанша күн|қанша уақыт|"
        r"занимает|\d+\s+(?:рабочих\s+)?(?:дн|недел)|takes? (?:about )?\d+|working days|"
        r"күн ішінде",
        "wholesale": r"wholesale|\bbulk\b|\bопт(?:ом|ов\w*|а\b|у\b|\b)|көтерме",
        "night": r"\bnight|overnight|ночн|ночью|түнгі|түнде",
        "photo": r"photo|picture|\bpic\b|фото|снимок|сфотограф|сурет",
        "warranty": r"warrant|guarantee|гаранти|кепілдік",
        "returns": r"return|exchange|обмен|возврат|вернуть|вернут|қайтар",
        "insurance": r"insurance|омс|страхов|сақтандыру",
        "booking": r"appointment|walk[- ]in|без записи|запись на|записаться можно|прием|приём|"
        r"қабылда",
        "age": r"\bage\b|how old|возраст|с какого|лет\b|жастан",
        "lifting": r"подъ[её]м|поднять|поднимете|этаж|лифт|\bfloor|upstairs|\blift\b|carry",
        "pickup": r"pick ?up|self-collect|collect it|самовывоз|забрать сам|өзім алып",
        "address": r"address|where are you|located|location|адрес|где вы|находитесь|"
        r"мекенжай|қайда орналас|(?<!\w)ул\. |улиц|проспект|шоурум|showroom|\bstreet\b",
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
# A Russian place name declines at its last vowel ("в Караганду", "из Астаны"): matched by
# what comes before it.
_PLACE_STEMS = {(p[:-1] if p[-1] in "ая" and len(p) > 4 else p): p for p in PLACES}
_PLACE_RE = re.compile(
    r"(?<!\w)("
    + "|".join(sorted(map(re.escape, _PLACE_STEMS), key=len, reverse=True))
    + r")\w{0,3}",
    re.IGNORECASE,
)
MAX_SENTENCES = 2


@dataclass(frozen=True)
class RuleAnswer:
    topics: frozenset[str]
    sentences: tuple[str, ...]


# No rule sentence answers: the order's lines alone (a discount the message meets still counts).
NO_RULE = RuleAnswer(frozenset(), ())


def topics(text: str) -> frozenset[str]:
    """The rule topics a text is about."""
    low = normalise(text)
    return frozenset(name for name, pattern in TOPICS.items() if pattern.search(low))


def places(text: str) -> frozenset[str]:
    found = _PLACE_RE.finditer(normalise(text))
    return frozenset(PLACES[_PLACE_STEMS[m.group(1).lower()]] for m in found)


# Abbreviations a sentence does not end at ("пр. Абая 52", "ул. Толе би").
_ABBREVIATIONS = "пр просп ул д г мкр корп кв оф им ст пос обл р-н тел st ave rd no tel bldg apt"
ABBREVIATIONS = frozenset(_ABBREVIATIONS.split())


# A rule written as a question and its answer ("Q: Do you deliver?" / "A: Yes, …"), as the
# reports' and the review's "Add a rule" prefill it: the question is no sentence to quote.
QUESTION_LINE_RE = re.compile(r"^\s*(?:Q|В|Вопрос|Question)\s*:", re.IGNORECASE | re.MULTILINE)
ANSWER_PREFIX_RE = re.compile(r"^\s*(?:A|О|Ответ|Answer)\s*:\s*", re.IGNORECASE | re.MULTILINE)


def sentences(text: str) -> list[str]:
    """The rules text, sentence by sentence (amounts such as "1.5" and "3 000" and addresses
    such as "пр. Абая 52" stay whole); of a "Q: … / A: …" pair, the answer alone."""
    lines = [line for line in (text or "").split("\n") if not QUESTION_LINE_RE.match(line)]
    plain = ANSWER_PREFIX_RE.sub("", "\n".join(lines))
    parts = [
        " ".join(p.split()) for p in re.split(r"(?<=[.!?])\s+(?=[A-ZА-ЯЁӘҒҚҢӨҰҮҺІ0-9])|\n+", plain)
    ]
    merged: list[str] = []
    for part in (p for p in parts if p):
        last = merged[-1].rsplit(" ", 1)[-1].rstrip(".").lower() if merged else ""
        if merged and merged[-1].endswith(".") and last in ABBREVIATIONS:
            merged[-1] += " " + part
        else:
            merged.append(part)
    return merged


# A sentence that serves places other than the named ones ("в другие города", "regions").
ELSEWHERE_RE = re.compile(
    r"other cities|regions?\b|outside|в регион|другие города|межгород|по (?:всему )?казахстану|"
    r"пригород|suburb|"
    r"за город|басқа қала|облыс",
    re.IGNORECASE,
)


def rule_answer(question: str, rules: str, said: Iterable[str] = ()) -> RuleAnswer | None:
    """The sentences that answer a question about the business's terms, or None.

    `said` are sentences a manager wrote in this chat: for a topic they cover they are the
    answer, not the rules (a promise made to this customer wins over the general text)."""
    asked = topics(question)
    if not asked:
        return None
    manager = list(said)
    written = sentences(rules)
    chosen: list[str] = []
    answered: set[str] = set()
    for topic in sorted(asked):
        for source in (manager, written):
            picked = _answering(question, topic, source)
            if picked:
                chosen += [p for p in picked if p not in chosen]
                answered.add(topic)
                break
    if not chosen:
        return None
    return RuleAnswer(frozenset(answered), tuple(chosen[: MAX_SENTENCES + 1]))


# A message that asks something: a question mark or a question word of the three languages.
QUESTION_RE = re.compile(
    r"\?|\b(?:how|what|when|where|which|who|why|do you|can i|is there|are there|сколько|"
    r"как|когда|где|какой|какая|какие|можно|есть ли|ли\b|почем|қанша|қашан|қайда|қалай|"
    r"ма\b|ме\b|ба\b|бе\b|па\b|пе\b)",
    re.IGNORECASE,
)
# Words of a question that name no subject of their own (beyond the matcher's stopwords).
_GENERIC_LINES = (
    "extra charge charges cost fee fees pay paid much many long need want would should could",
    "доплата доплачивать платить платно платный стоить стоимость сумма нужно надо можно будет",
    "скажите подскажите интересует вопрос узнать хотела хотел хотели ваши ваша ваше ваш",
    "сколько ақысы төлем керек бола",
)
GENERIC_WORDS = frozenset(" ".join(_GENERIC_LINES).split())


def rule_by_words(question: str, rules: str) -> RuleAnswer | None:
    """The rule sentence a question names by its own words, on a subject no topic lists ("выезд
    мастера на дом", "тест на уровень платный?"): the sentence sharing the rarest of the
    question's words (compared by meaning across scripts, `word_key`), or None when the
    message asks nothing or shares no such word with any sentence."""
    if not QUESTION_RE.search(normalise(question)):
        return None
    asked = _subject_keys(question)
    written = sentences(rules)
    keyed = [_subject_keys(s) for s in written]
    if not asked or not written:
        return None
    spread = Counter(key for keys in keyed for key in keys)

    def weight(keys: set[str]) -> float:
        return sum(math.log(1 + len(written) / spread[key]) for key in asked & keys)

    best = max(range(len(written)), key=lambda i: (weight(keyed[i]), -i))
    if not asked & keyed[best]:
        return None
    return RuleAnswer(frozenset(), (written[best],))


def _subject_keys(text: str) -> set[str]:
    return {
        word_key(w)
        for w in words(text)
        if len(w) > 3
        and not w.isdigit()
        and not is_stopword(w)
        and w not in GENERIC_WORDS
        and (family_of(w) or (None,))[0] not in CONTAINERS  # "лист", "мешок": how it is sold
    }


def _answering(question: str, topic: str, source: Sequence[str]) -> list[str]:
    candidates = [s for s in source if topic in topics(s)]
    wanted = places(question)
    if wanted:
        # A sentence about other places does not answer for this one ("Astana" vs "Almaty").
        candidates = [
            s for s in candidates if not places(s) or places(s) & wanted or ELSEWHERE_RE.search(s)
        ]
    if not candidates:
        return []
    # Prefer the sentences in the customer's script when the rules are written in both.
    script = language.script(question)
    same = [s for s in candidates if language.script(s) == script]
    chosen = same or candidates
    asked_words = _shapes(question)

    # The sentence sharing most words with the question, then the one that is about the topic
    # from its first words ("Оплата: …" rather than "… после оплаты").
    def about(sentence: str) -> int:
        found = TOPICS[topic].search(normalise(sentence))
        return found.start() if found else len(sentence)

    best = max(chosen, key=lambda s: (len(_shapes(s) & asked_words), -about(s), -chosen.index(s)))
    return [best]


def _shapes(text: str, skip: re.Pattern[str] | None = None) -> set[str]:
    return {
        skeleton(stem(w))
        for w in words(text)
        if len(w) > 2 and not w.isdigit() and not (skip and skip.search(w))
    }


@dataclass(frozen=True)
class Charge:
    """A fixed amount the rules put on an order for a topic asked about ("доставка 3 000 тг"),
    0 when the rules make it free at this order's size. `words` is the clause it comes from."""

    topic: str
    amount: Decimal
    words: str


FREE_RE = re.compile(r"free|бесплатн|тегін", re.IGNORECASE)
# What makes a "free" hold only sometimes: "при заказе от…", "if you take two", "кроме ковров".
CONDITION_RE = re.compile(
    r"\b(?:при|если|когда|кроме|только|от|свыше|if|when|for orders|from|over|above|except|only|"
    r"unless|болса|кезде)\b",
    re.IGNORECASE,
)
FROM_RE = re.compile(r"(?:\bот|\bfrom|\bover|\babove|свыше|не менее|at least)\s*$", re.IGNORECASE)
# An amount per something the customer did not count (per floor, per km): not a fixed charge.
PER_RE = re.compile(
    r"^\s*(?:тг|kzt|₸|тенге)?\.?\s*(?:за|per|a|each|каждый)\s+"
    r"(?!(?:(?:один|одну|одно|one|each|every|каждый|каждую)\s+)?(?:заказ|order|рейс|trip|выезд|поездк))\w+",
    re.IGNORECASE,
)


def charges(
    question: str, answer: RuleAnswer, subtotal: Decimal, every_sentence: str = ""
) -> list[Charge] | None:
    """The fixed charge of every topic the question asks to add to an order ("с доставкой в
    Талгар"), read from the answering sentences; None when one of them is not a fixed amount
    (a price "from", per floor, or no amount), so no total is computed at all."""
    found: list[Charge] = []
    wanted_places = places(question)
    if every_sentence:
        # A total asks for the fee itself, wherever the rules write it: every sentence on the
        # answer's topics, not only the ones that answered the question best.
        # The answer's own first: a manager's "курьер для вас бесплатно" stands.
        on_topics = tuple(s for s in sentences(every_sentence) if topics(s) & answer.topics)
        kept = answer.sentences + tuple(s for s in on_topics if s not in answer.sentences)
        answer = RuleAnswer(answer.topics, kept)
    for topic in sorted(answer.topics):
        clauses = [
            (clause, inherited)
            for sentence in answer.sentences
            if topic in topics(sentence)
            for clause, inherited in _clauses(sentence)
        ]
        on_topic = [c for c, t in clauses if topic in t]
        free = [c for c in on_topic if FREE_RE.search(c) and not find_amounts(c)]
        if any(not CONDITION_RE.search(c) for c in free):
            # "Хорошо, курьер для вас бесплатно": free, whatever the order.
            found.append(Charge(topic, Decimal(0), free[0]))
            continue
        free_from = [_threshold(c) for c in on_topic if FREE_RE.search(c)]
        fees = [
            c
            for c in on_topic
            if not FREE_RE.search(c) and (len(find_amounts(c)) == 1 or _below(c) is not None)
        ]
        # "если сумма заказа меньше 7 000 тг — доставка 700 тг": only below its limit.
        fees = [c for c in fees if (below := _below(c)) is None or subtotal < below[0]]
        if wanted_places:
            # The clause naming the place, else the one for "other cities", else one naming
            # no place at all ("в Караганду": not the Almaty clause, the other cities' one).
            fees = (
                [c for c in fees if places(c) & wanted_places]
                or [c for c in fees if ELSEWHERE_RE.search(c) and not places(c)]
                or [c for c in fees if not places(c)]
            )
        if not fees:
            return None
        # The topic's own words ("доставка") tell the clauses apart no more; a place or a kind
        # of product does ("за город (Талгар…)", "установка стиральной машины").
        pattern = TOPICS[topic]
        asked_here = _shapes(question, pattern)
        fee = max(fees, key=lambda c: (len(_shapes(c, pattern) & asked_here), -fees.index(c)))
        below = _below(fee)
        amount = below[1] if below is not None else find_amounts(fee)[0]
        before, after = fee[: amount.start], fee[amount.start + len(amount.text) :]
        if FROM_RE.search(before) or PER_RE.match(after):
            return None
        limits = [t for t in free_from if t is not None]
        if limits and subtotal >= min(limits):
            found.append(Charge(topic, Decimal(0), fee))
        else:
            found.append(Charge(topic, amount.value, fee))
    return found


# Topics that put an amount on an order; "после оплаты" in a delivery clause is not one.
CHARGED = frozenset({"delivery", "assembly", "installation", "lifting"})


def rule_clauses(rules: str) -> list[str]:
    """Every clause of the rules, sentence by sentence."""
    return [clause for sentence in sentences(rules) for clause, _topics in _clauses(sentence)]


def topic_clauses(rules: str, topic: str) -> list[str]:
    """Every clause of the rules on a topic, with the sentences that go on about it without
    naming it ("Доставка по Алматы — 7 000 тг. За город — 7 000 тг + 250 тг за км.")."""
    found: list[str] = []
    previous: frozenset[str] = frozenset()
    for sentence in sentences(rules):
        own = topics(sentence)
        about = own or previous
        if topic in about:
            found += [
                clause for clause, inherited in _clauses(sentence) if topic in (inherited or about)
            ]
        previous = own
    return found


def _clauses(sentence: str) -> list[tuple[str, frozenset[str]]]:
    """A sentence's clauses (split at ";" then ","), each with its topics; a clause without
    one of its own is about what the clause before it was ("…; за город 4 000 тг")."""
    out: list[tuple[str, frozenset[str]]] = []
    current: frozenset[str] = frozenset()
    for part in _split_outside_brackets(sentence):
        part = part.strip(" .")
        if not part:
            continue
        own = topics(part) & CHARGED
        current = own or current
        out.append((part, current))
    return out


BELOW_RE = re.compile(r"(?:меньше|менее|ниже|less than|below|under)\s*$", re.IGNORECASE)


def _below(clause: str) -> tuple[Decimal, Amount] | None:
    """A fee charged below an order size ("меньше 7 000 тг — доставка 700 тг"): the limit and
    the fee's amount; None for any other clause."""
    amounts = find_amounts(clause)
    if len(amounts) == 2 and BELOW_RE.search(clause[: amounts[0].start]):
        return amounts[0].value, amounts[1]
    return None


def _threshold(clause: str) -> Decimal | None:
    for amount in find_amounts(clause):
        if FROM_RE.search(clause[: amount.start]):
            return amount.value
    return None


def _split_outside_brackets(sentence: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for i, ch in enumerate(sentence):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        next_is_digit = i + 1 < len(sentence) and sentence[i + 1].isdigit()
        if depth == 0 and (ch == ";" or (ch == "," and not next_is_digit)):
            parts.append(current)
            current = ""
        else:
            current += ch
    return [*parts, current]
