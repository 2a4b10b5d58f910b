"""What a customer's message asks for, as the catalogue assistant reads it: a person, to buy,
special terms, or a complaint. English, Russian and Kazakh (and the mix of the two).

Rules are written per meaning, several ways of saying each, and a phrase only counts when it is
not denied in its own clause: "don't call me, just text me the price", "менеджер не нужен",
"I'm not complaining", "шағым емес" ask for nothing. A clause ends at punctuation or at "but",
"just", "а", "просто", "тек", so "I don't want to wait, call me" still asks for a call.
Checked in this order; the first reason found decides.
"""

from __future__ import annotations

import re

from assistant.knowledge.matching import normalise

INTENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("complaint", (
        r"complain", r"\bbroken\b", r"\bbroke\b", r"damaged", r"defect", r"\brefund",
        r"money back", r"\breturn (?:it|the|my|this)", r"want to return", r"terrible", r"awful",
        r"horrible", r"\bworst\b", r"disappoint", r"\bscam", r"cheated", r"\brude\b",
        r"\bangry\b", r"furious", r"unacceptable", r"never (?:arrived|came|got)",
        r"still (?:not|hasn.?t|haven.?t|no)\b", r"(?:not|n.?t) (?:yet )?(?:received|delivered)",
        r"didn.?t (?:get|receive|arrive|come)", r"(?:doesn.?t|does not|stopped|not) work",
        r"\bwrong (?:item|order|size|colou?r|product|model)", r"where is my order",
        r"scratche?d", r"(?:poor|bad) quality", r"you promised",
        r"жалоб", r"пожалу[юй]", r"сломал", r"сломан", r"\bбрак", r"возврат", r"верните",
        r"вернуть", r"ужасн", r"отвратительн", r"обман", r"недовол", r"хамств", r"хамил",
        r"безобраз", r"кошмар", r"разочаров", r"до сих пор не", r"так и не", r"не работает",
        r"перестал\w* работать", r"не пришл", r"не привезли", r"не доставили", r"не подош",
        r"царапин", r"поцарапан", r"испорчен", r"где мой заказ", r"плохое качество",
        r"шағым", r"сынып", r"бұзыл", r"ақшамды қайтар", r"келмеді", r"нашар",
    )),
    ("asks_for_human", (
        r"\bmanager", r"\bhuman\b", r"real person", r"live person", r"\ba person\b",
        r"\boperator", r"\bagent\b", r"consultant", r"call me", r"call back", r"give me a call",
        r"ring me", r"phone me", r"contact me", r"get in touch", r"(?:speak|talk) (?:to|with)",
        r"менеджер", r"оператор", r"консультант", r"живо\w* человек", r"с человеком",
        r"позвон(?:ите|и|ить)\b", r"перезвоните", r"наберите", r"созвон", r"свяжитесь",
        r"связаться", r"позовите", r"соедините", r"поговорить с",
        r"адаммен", r"хабарлас", r"қоңырау", r"звондаңыз",
    )),
    ("non_standard_terms", (
        r"discount", r"cheaper", r"lower (?:the )?price", r"better price", r"best price",
        r"\bdeal\b", r"bargain", r"wholesale", r"\bbulk\b", r"install?ments?", r"\bin parts\b",
        r"\bcredit\b", r"\bloan\b", r"pay later", r"\bcustom", r"made to order",
        r"special (?:price|offer|terms)", r"negotia", r"\bpromo", r"coupon", r"for free",
        r"free (?:delivery|shipping|assembly)", r"\bfor \d+\s?k\b", r"\d+\s?k each",
        r"if i (?:take|buy|order) (?:\d+|ten|five|twenty)",
        r"скидк", r"дешевле", r"подешевле", r"уступ", r"\bторг", r"\bопт\w*", r"рассрочк",
        r"кредит", r"в долг", r"индивидуальн", r"на заказ\b", r"промокод", r"\bакци[яиюй]",
        r"бесплатн", r"отдадите за", r"сделаете за", r"если (?:возьму|возьмем|куплю) \d+",
        r"жеңілдік", r"бөліп", r"несие", r"арзан", r"тегін",
    )),
    ("ready_to_buy", (
        r"\bbuy\b", r"\bi.?ll take\b", r"\bi will take\b", r"\bwe.?ll take\b",
        r"\b(?:i|we) (?:want|would like|.?d like|need) to (?:buy|order|purchase|get|book|reserve)",
        r"\b(?:i|we) (?:want|.?ll take|will take|.?d like) (?:\d+|one|two|three|four|five|ten)\b",
        r"\bordering\b", r"\bto order\b", r"place (?:an|the|my) order", r"make an order",
        r"\border (?:\d+|one|two|three|a|an|the|it|them)\b", r"purchase",
        r"how (?:do|can|should) i pay", r"ready to (?:buy|order|pay)", r"payment link",
        r"want to pay", r"pay now", r"checkout", r"invoice", r"\bbook (?:a|an|me|it)\b",
        r"booking", r"appointment", r"reserve", r"sign (?:me )?up", r"let.?s do it",
        r"\bкуп(?:лю|ить|им|ите|аю)\b", r"покупаю", r"\bберу\b", r"\bберем\b", r"возьм(?:у|ем)",
        r"заказ(?:ать|ываю|ала?|ем)\b", r"закажу", r"\bоформ", r"оплачу",
        r"как (?:можно )?оплатить", r"куда (?:платить|оплатить|переводить|перевести)",
        r"готов\w* (?:купить|оплатить|заказать|брать|взять)", r"\bсчет\b", r"реквизит",
        r"запиш(?:ите|усь)", r"записат", r"\bзапись\b", r"бронир", r"хочу \d+",
        r"сатып ал", r"\bаламын\b", r"\bалам\b", r"тапсырыс", r"жазыл", r"жазып қой",
        r"төлейін", r"қалай төлеймін",
    )),
)  # fmt: skip

# Phrases that look like an intent word but are an availability question ("on order"), and
# polite requests that only look like a denial ("не могли бы вы позвонить").
NEUTRAL_PHRASES = (
    r"под заказ", r"on order", r"to order\?", r"made to order\?", r"не могли бы",
    r"не можете ли", r"не подскажете", r"couldn.?t you", r"can.?t you", r"why don.?t you",
    r"почему бы не", r"would you mind",
)  # fmt: skip
CLAUSE_RE = re.compile(
    r"[,.;!?\n()—]|\s(?:but|just|only|instead|а|но|просто|только|лучше|бірақ|тек|жай)\s"
)
# A denial before the phrase, in its clause: "don't call me", "не надо звать менеджера".
NEGATION_BEFORE = re.compile(
    r"(?:\b(?:don.?t|do not|dont|doesn.?t|no need|not|never|without|no|нет|не|ни|без|незачем)"
    r"\b)(?:\s+\S+){0,4}\s*$"
)
# A denial after it: "a manager is not needed", "менеджер не нужен", "шағым емес", "шалмаңыз".
NEGATION_AFTER = re.compile(
    r"^\S*\s*(?:\S+\s+){0,2}?(?:(?:is |are )?not (?:needed|necessary|required)|no need|"
    r"не (?:нуж|надо|обязательн|требует|стоит|зови|звони)|емес|жоқ|керек емес|қажет емес|"
    r"шалма|шалмаңыз)"
)


def detect_intent(message: str) -> str:
    """The handoff reason the message asks for, or ""."""
    low = normalise(message)
    for phrase in NEUTRAL_PHRASES:
        low = re.sub(phrase, " ", low)
    clauses = CLAUSE_RE.split(f" {low} ")
    for reason, patterns in INTENTS:
        for clause in clauses:
            if any(_affirmed(pattern, clause) for pattern in patterns):
                return reason
    return ""


def mentions(reason: str, text: str) -> bool:
    """Whether the text speaks of what a reason is about ("рассрочка" for special terms), used
    to see whether a business rule already answers a request."""
    low = normalise(text)
    return any(re.search(p, low) for r, patterns in INTENTS if r == reason for p in patterns)


def _affirmed(pattern: str, clause: str) -> bool:
    for match in re.finditer(pattern, clause):
        before, after = clause[: match.start()], clause[match.end() :]
        if NEGATION_BEFORE.search(before) or NEGATION_AFTER.match(after):
            continue
        return True
    return False
