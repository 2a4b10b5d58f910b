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

from assistant.knowledge.matching import normalise, word_key
from assistant.knowledge.money import find_amounts
from assistant.knowledge.rules import RuleAnswer
from inbox.conversations.models import HandoffReason

WORD_RE = re.compile(r"[^\W\d_]{3,}")

INTENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (HandoffReason.COMPLAINT, (
        r"complain", r"\bbroken\b", r"\bbroke\b", r"damaged", r"defect", r"\brefund",
        r"money back", r"\breturn (?:it|the|my|this)", r"want to return", r"terrible", r"awful",
        r"horrible", r"\bworst\b", r"disappoint", r"\bscam", r"cheated", r"\brude\b",
        r"\bangry\b", r"furious", r"unacceptable", r"not acceptable", r"неприемлем",
        r"never (?:arrived|came|got)",
        r"still (?:not|hasn.?t|haven.?t|no)\b", r"(?:not|n.?t) (?:yet )?(?:received|delivered)",
        r"didn.?t (?:get|receive|arrive|come)", r"(?:doesn.?t|does not|stopped|not) work",
        r"\bwrong (?:item|order|size|colou?r|product|model)", r"where is my order",
        r"(?:sent|gave|delivered|brought|sold) (?:me |us )?(?:the |a )?wrong",
        r"(?:прислали|привезли|отправили|продали) (?:мне |нам )?не т", r"перепутали",
        # what arrived is not what was ordered: "заказывала графит, а пришёл синий", "по длине
        # 10 см не хватает"
        r"(?:пришл?[оаи]?|пришёл|пришел|привезли|доставили|получил\w*|забрал\w*)\b[^.?!]{0,80}"
        r"(?:не (?:тот|та|то|те)\b|не хватает|не такой|не такая|не того)",
        r"\b(?:цвет|размер|длин|ширин|высот|модел|оттен|colou?r|size)\w* (?:не (?:тот|та|то|те)\b|"
        r"is wrong|wrong)", r"(?:см|мм|метр\w*|штук\w*|шт|пачк\w*)\s+не хватает",
        r"не хватает \d+", r"(?:short|missing) (?:by )?\d+\s*(?:cm|mm|m|pcs|pieces)",
        r"scratche?d", r"(?:poor|bad) quality", r"you promised", r"\bdied\b", r"\bdead\b",
        r"(?:no ?one|nobody) (?:is )?(?:answer|repl|respond|pick)", r"droop", r"wilt",
        r"not what i (?:paid|ordered|asked) for", r"\blate\b.{0,20}\b(?:again|hours?)\b",
        r"жалоб", r"пожалуюсь", r"пожаловаться", r"сломал", r"сломан", r"\bбрак", r"возврат",
        r"верните",
        r"вернуть", r"ужасн", r"отвратительн", r"обман", r"недовол", r"хамств", r"хамил",
        r"безобраз", r"кошмар", r"разочаров", r"до сих пор не", r"так и не", r"не работает",
        r"перестал\w* работать", r"не пришл", r"не привезли", r"не доставили", r"не подош",
        r"царапин", r"поцарапан", r"испорчен", r"где мой заказ", r"плохое качество",
        r"царапал", r"разбил", r"повредил", r"испортил", r"опоздал", r"нагруб", r"грубил",
        r"выпал[аио]?\b", r"завял", r"увял", r"пятн(?!иц)", r"\bstain", r"\bдыр", r"\bhole\b",
        r"\btorn\b", r"порван", r"\bdent(?:ed|s)?\b", r"вмятин", r"помят",
        # Damage, loss and compensation, whatever the product: "три мешка рваные, половина
        # высыпалась, кто будет возмещать?", "торт был несвежий", "cracked", "spoiled".
        r"\bрван", r"разорван", r"высыпал", r"треснул", r"трещин", r"лопнул", r"протек",
        r"несвеж", r"просроч", r"испортил", r"тухл", r"плесен", r"возмест", r"компенс",
        r"\bcrack", r"\bspoil", r"\bexpired\b", r"\bmou?ldy?\b", r"\bstale\b",
        r"compensat", r"reimburs", r"\bspilt\b|\bspilled\b",
        r"\bгруб(?:ый|ая|ые|о|ил|ила|ят|ит)?\b", r"кровоточ", r"после (?:вашей|вашего|ваших|вас)\b",
        r"after (?:your|you) (?:\w+ )?(?:clean|treat|repair|install|service|fix)",
        r"никто не (?:отвечает|берет|перезвонил)", r"не то,? что (?:заказывал|оплачивал|просил)",
        r"шағым", r"сынып", r"бұзыл", r"ақшамды қайтар", r"келмеді", r"нашар",
        # Theft, loss and staff who do nothing: "украли телефон, администратор ничего не делает".
        r"украл", r"пропал[аио]?", r"ничего не (?:дела|предприн|реагир)", r"не реагиру",
        r"stolen", r"stole", r"(?:no ?one|nobody) (?:does|did|is doing) anything",
        r"ұрлап", r"ұрланды",
        r"енді\s+(?:\w+\s+)?ауыр",
        # A problem told without the obvious words: waiting, no-shows, a repeat, sarcasm.
        r"(?:didn.?t|did not|never|doesn.?t) (?:show|turn) up", r"no.?show", r"\bwasted\b",
        r"for nothing", r"(?:no ?one|nobody) (?:saw|came|showed|called|met)",
        r"(?:waited|been waiting|was waiting|were waiting|sat|been sitting)\b.{0,40}"
        r"\b(?:hours?|days?|weeks?)\b",
        r"(?:this is|it.?s|that.?s|for) the (?:second|third|fourth|\d+(?:nd|rd|th)) time",
        r"(?:second|third|fourth) time (?:in a row|now|already|this (?:week|month))",
        r"\bleak(?:s|ing|ed)\b",
        r"still waiting",
        r"(?:hours?|days?|weeks?) late\b", r"\bwhat (?:a|kind of) service",
        r"(?:уже|это|снова|опять) (?:\w+ )?(?:втор|трет|четверт|пят|котор)\w* раз\b",
        r"(?:втор|трет|четверт|котор)\w* раз (?:подряд|уже|опять|снова|не\b|переносит|привозит)",
        r"ну и сервис", r"что за сервис",
        r"(?:ни|никакого) (?:слуху|ответа|звонка)",
        r"сколько можно(?=\s*$)|сколько можно (?:ждать|уже|терпеть|тянуть|обещать|переносить)",
        r"сколько (?:еще )?ждать",
        r"уже (?:\w+ )?(?:втор|трет|четверт)\w* недел|(?:втор|трет|четверт)\w* недел\w* (?:пошла|"
        r"жду|ждем)",
        r"(?:сижу|сидим|сидела?|стою)\s+(?:\w+\s+)?жд",
        r"\bжд(?:у|ем|ала?|али)\b\s+(?:уже|целый|почти|больше)\s",
        r"\bжд(?:у|ем|ала?|али)\b\s+(?:\d+|два|три|пять)\s*(?:дн|час|недел)",
        r"(?:привозите|присылаете|отправляете|привезли|прислали) (?:опять |снова )?не т",
        r"(?:привезли|доставили|приехал\w*|пришл\w*|пришел|привез)\s+(?:\w+\s+)?"
        r"через \d+\s*(?:час\w*|дн\w*|недел\w*) вместо", r"не (?:приехал|явил|пришел|пришла)",
        r"\bтеч[её]т\b", r"протека", r"подтека", r"зря (?:\w+ )?(?:ждал|отпрос|потрат|приехал)",
        r"никто не (?:принял|вышел|пришел|приехал|встретил)",
        r"still (?:isn.?t|aren.?t|is not|are not|hasn.?t|nothing)\b",
        r"әлі (?:де )?(?:\w+ )?келм",
        r"келген жоқ", r"(?:екінші|үшінші) рет.{0,30}(?:кеші[кг]|келмед|жоқ|бұзыл|қате)", r"күттім",
        r"күтіп отыр",
        r"ағып",
    )),
    (HandoffReason.ASKS_FOR_HUMAN, (
        r"\bmanager", r"\bhuman\b", r"real person", r"live person", r"\ba person\b",
        r"\boperator", r"\bagent\b", r"consultant", r"call me", r"call back", r"give me a call",
        r"ring me", r"phone me", r"contact me", r"get in touch", r"(?:speak|talk) (?:to|with)",
        r"менеджер", r"оператор", r"консультант", r"живо\w* человек", r"с человеком",
        r"позвон(?:ите|и|ить)\b", r"перезвоните", r"наберите", r"созвон", r"свяжитесь",
        r"связаться", r"позовите", r"соедините", r"поговорить с",
        r"(?:someone|somebody|anyone) (?:who )?(?:can |could )?(?:tell|answer|help|call)",
        r"(?:кто-то|кто-нибудь|кто нибудь)\s+(?:\w+\s+)?"
        r"(?:сказать|подсказать|ответить|помочь|позвонить)",
        r"адаммен", r"хабарлас", r"қоңырау", r"звондаңыз",
        # A person asked for in other words: "someone from your team", "not a bot", "живой".
        r"(?:someone|somebody|anyone|a person) (?:from|at|in|on) (?:your|the) "
        r"(?:team|store|shop|company|clinic|office|staff)",
        r"(?:can|could|will|would) (?:a |an )?(?:real |live |actual )?(?:person|human|someone|"
        r"somebody|employee|staff member) (?:write|text|message|reply|answer|contact)",
        r"not (?:a |with a |to a )?(?:bot|robot)\b",
        r"(?:are|r) (?:you|u) (?:a )?(?:bot|robot)",
        r"(?:chat|speak|talk|deal|discuss)\b.{0,30}\bdirectly\b",
        r"\bdirectly (?:with|to) (?:a|the|your|someone)",
        r"не (?:с )?(?:бот|робот)(?:ом|а|у)?\b",
        r"(?:кто-нибудь|кто-то|есть ли|есть|вы|ты)\s+(?:\w+\s+)?живо[йе]\b|живо[йе]\s+(?:оператор|"
        r"менеджер|есть)",
        r"(?:ты|вы) (?:бот|робот)",
        r"с кем-(?:нибудь|то)", r"кого-(?:нибудь|то) из",
        r"(?:контакт|номер|телефон)\w* (?:кого|менеджер|сотрудник)",
        r"(?:пообщаться|поговорить|связаться|общаться|обсудить|написать|переписываться)\s+"
        r"(?:\w+\s+)?напрямую|напрямую\s+(?:\w+\s+)?(?:с|со)\s",
        r"(?:пообщаться|переговорить|обсудить лично)",
        r"лично (?:\w+ )?(?:уточн|обсуд|поговор|пообщ)",
        r"(?:поговорить|пообщаться|связаться|соедините|переговорить|свяжите|обсудить|можно)\s+"
        r"(?:\w+\s+)?(?:с|со)\s+(?:флористом|врачом|доктором|мастером|специалистом|сотрудником|"
        r"продавцом|кем-нибудь|кем-то)\b",
        r"тірі адам", r"адам бар ма", r"(?:get|have|arrange) a (?:call|phone call)\b",
        r"(?:is )?(?:anyone|anybody|someone|somebody) (?:there|real|alive|human)\b", r"маманмен",
        r"сөйлес", r"бот емес",
    )),
    (HandoffReason.NON_STANDARD_TERMS, (
        # one meaning in three languages, so a question and a rule in two of them meet
        r"wholesale|\bbulk\b|\bопт\w*|көтерме", r"discount|скидк|жеңілдік",
        r"install?ments?|рассрочк|бөліп", r"\bcredit\b|кредит|несие",
        r"\d+\s*(?:%|percent)\s*off\b", r"cheaper", r"lower (?:the )?price",
        r"better price", r"best price",
        r"\bdeal\b", r"bargain", r"\bin parts\b", r"\bloan\b", r"pay later", r"\bcustom(?!er)",
        r"made to order",
        r"special (?:price|offer|terms)", r"negotia", r"\bpromo", r"coupon", r"for free",
        r"free (?:delivery|shipping|assembly)", r"\bfor \d+\s?k\b", r"\d+\s?k each",
        r"if i (?:take|buy|order) (?:\d+|ten|five|twenty)",
        r"дешевле", r"подешевле", r"уступ", r"\bторг", r"в долг", r"индивидуальн", r"на заказ\b",
        r"промокод", r"\bакци[яиюй]",
        r"бесплатн", r"отдадите за", r"сделаете за", r"если (?:возьму|возьмем|куплю) \d+",
        r"арзан", r"тегін",
        r"скин(?:ете|ешь|ьте|уть|ите)(?!\s+(?:\w+\s+)?(?:адрес|фото|ссылк|номер|прайс|реквизит|"
        r"каталог|геолок|локац|карт|контакт|видео|инф|список|счет|точк|расписан|график))",
        r"сбросит", r"(?:price|цена) (?:for us|для нас)",
        r"\d+\s*\w*\s*(?:в месяц|per month|a month|every month|ежемесячно)",
        r"(?:оплат|плат|заплат)\w*\s+(?:через|после|позже|потом)", r"pay (?:later|after|in \d+)",
        r"отсрочк", r"постоплат",
        r"\bmake (?:it|the|a|an)\b.{0,40}\b(?:wide|long|high|tall|bigger|smaller|larger)",
        r"instead of the standard", r"нестандарт", r"по (?:моим|нашим|индивидуальным) размерам",
        r"собрать букет", r"(?:тысяч|тыс|k)\s+на\s+\d+|на\s+\d+\s*(?:тысяч|тыс)", r"budget of",
        r"(?:можно|можете|может)\s+(?:\w+\s+)?под заказ|под заказ\s+(?:можно|можете|привез)",
        r"(?:can|could) you order (?:it|one|them) in",
        # Holding an item for a time, paying over months, paying from a future salary.
        r"\bhold (?:it|the|this|that|one|them|on to|items?|goods|products?|an? \w+)\b",
        r"put (?:it|them|\w+ \w+|\w+) aside",
        r"keep (?:it|the|this|that|one|them)\b.{0,30}\bfor me",
        r"reserve\b.{0,40}\b(?:for|until|till) (?:a|one|two|\d+|next|my)\b",
        r"(?:when|once|after) i get (?:my |the )?(?:salary|paid|paycheck|wages)", r"payday",
        r"monthly payments?",
        r"(?:split|spread|divide|break)\b.{0,40}\b(?:payments?|months?|parts?)",
        r"\bover \d+ months",
        r"(?:pay|payment|invoice)\w*\b.{0,20}\b(?:net|within|in) \d+ days|\bnet \d+\b",
        r"отлож(?:ите|ить|и|ишь|ите)\b", r"придерж", r"зарплат", r"получк",
        r"(?:рассрочк|оплат|плат|раздел|разбить|разби)\w*\s+(?:\w+\s+)?(?:на|в) \d+ (?:месяц|"
        r"платеж|част)",
        r"(?:на|в) \d+ (?:платеж|част)", r"ежемесячн\w* платеж", r"частями",
        r"(?:оплат|счет)\w*\s+(?:\w+\s+)?(?:с отсрочкой|через \d+ дн)",
        r"\bhalf (?:now|today|upfront)\b", r"\bin (?:two|three|four|\d+) (?:parts|payments)\b",
        r"половин\w* (?:сейчас|сразу|сегодня|потом)", r"deferr?(?:al|ed)", r"\bpostpone",
        r"сақтап қой", r"айлық", r"бөліп",
    )),
    (HandoffReason.READY_TO_BUY, (
        r"\bbuy\b", r"\bi.?ll take\b", r"\bi will take\b", r"\bwe.?ll take\b",
        r"\b(?:i|we) (?:want|would like|.?d like|need) to (?:buy|order|purchase|get|book|reserve)",
        r"\b(?:i|we) (?:.?ll take|will take) (?:\d+|one|two|three|four|five|ten)\b",
        r"\bordering\b", r"\bto order\b", r"place (?:an|the|my) order", r"make an order",
        r"\border (?:\d+|one|two|three|a|an|the|it|them)\b", r"purchase",
        r"let.?s (?:do|go with|take|get)", r"when can (?:i|we) come", r"i.?d like to come",
        r"(?:хочу|можно|могу|хотел[аи]? бы) (?:прийти|подойти|приехать|зайти)", r"\bi.?m ready\b",
        r"^(?:\W*(?:ok(?:ay)?|fine|good|great|then|yes|so)\W+)*(?:please\s+)?(?:send|deliver|"
        r"bring|ship)\b",
        r"how (?:do|can|should) i pay", r"ready to (?:buy|order|pay)", r"payment link",
        r"want to pay", r"pay now", r"checkout",
        r"(?:send|issue|make|need|want|give) (?:me |us )?(?:an? |the )?invoice",
        r"\bbook (?:a|an|me|it)\b",
        r"booking", r"appointment", r"reserve", r"sign (?:me )?up", r"let.?s do it",
        r"\bкуп(?:лю|ить|им|ите|аю)\b", r"покупаю", r"\bберу\b", r"\bберем\b", r"возьм(?:у|ем)",
        r"заказ(?:ать|ываю|ала?|ем)\b", r"закажу", r"\bоформ", r"оплачу",
        r"как (?:можно )?оплатить", r"куда (?:платить|оплатить|переводить|перевести)",
        r"готов\w* (?:купить|оплатить|заказать|брать|взять)",
        r"(?:выставите|выставьте|пришлите|скиньте|отправьте|нужен|дайте|сделайте|"
        r"жду)\s+(?:\w+\s+)?счет\b",
        r"счет на оплату", r"реквизит",
        r"запиш(?:ите|усь)", r"записыва(?:йте|й)", r"записат", r"привезите", r"отправьте",
        r"доставьте", r"давайте (?:оформ|возьм|закаж)", r"\bзапись\b", r"бронир",
        r"сатып ал", r"\bаламын\b", r"\bалам\b", r"алайын", r"аламыз", r"жіберіңіз",
        r"тапсырыс", r"жазыл", r"жазып қой",
        r"төлейін", r"қалай төлеймін",
    )),
)  # fmt: skip

# Phrases that look like an intent word but are an availability question ("on order"), and
# polite requests that only look like a denial ("не могли бы вы позвонить").
NEUTRAL_PHRASES = (
    r"(?<!можно )(?<!можете )(?<!может )под заказ(?!\s+(?:можно|можете|привез))",
    r"on order", r"to order\?", r"made to order\?", r"не могли бы",
    r"не можете ли", r"не подскажете", r"couldn.?t you", r"can.?t you", r"why don.?t you",
    r"почему бы не", r"would you mind",
    r"(?:какой|какие|каков\w*|есть ли|есть|как)\s+(?:у вас\s+)?(?:условия\s+)?(?:по\s+)?возврат\w*",
    r"условия возврата", r"return policy", r"(?:what|how) (?:is|are|about) (?:your |the )?returns?",
    r"waiting room", r"зал ожидания",
    r"(?:адрес|фото\w*|ссылк\w*|номер|прайс|реквизиты|каталог|геолокаци\w*|локаци\w*|карт[уы]|"
    r"контакт\w*|видео|список|точк[уи])\s+(?:\w+\s+)?скин(?:ете|ешь|ьте|ь|ите)",
)  # fmt: skip
CLAUSE_RE = re.compile(
    r"[,;!?\n()—]|(?<!\d)\.|\.(?!\d)|\s(?:but|just|only|instead|а|но|просто|только|лучше|бірақ|"
    r"тек|жай)\s"
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


# "I want 2" is a purchase; "I want 2 boxes, total?" asks what they would cost.
WANTS_QUANTITY = re.compile(
    r"\b(?:i|we) (?:want|need|.?d like|would like) (?:\d+|one|two|three|four|five|ten)\b|"
    r"(?:хочу|хотим|беру|берем|возьму|возьмем) \d+|\d+ (?:дана|штук\w*) (?:аламын|алам)"
)
QUESTION_RE = re.compile(r"\?|how much|total|price|cost|сколько|итого|почем|цена|қанша|баға")
# A clause that only supposes ("if it doesn't fit, can I return it?") neither buys nor complains.
CONDITIONAL_RE = re.compile(r"\b(?:if|in case|если|в случае|егер)\b")
HYPOTHETICAL_REASONS = (HandoffReason.COMPLAINT, HandoffReason.READY_TO_BUY)
# "…, если можно" / "…, if possible" is a polite request, not a supposition.
POLITE_IF_RE = re.compile(
    r"(?:если|if|егер)\s+(?:можно|possible|you can|it.?s possible|получится|не сложно|"
    r"не трудно|вам удобно|convenient|мүмкін)"
)


def detect_intent(message: str, list_words: frozenset[str] = frozenset()) -> str:
    """The handoff reason the message asks for, or "". Words the price list itself uses
    (`list_words`, as `word_key`s) name what is sold, not what the customer wants: at a
    language school "индивидуальные занятия" are a product, not special terms; a bakery's
    "торт на заказ" is its list, not a custom order."""
    low = normalise(message)
    if list_words:
        low = WORD_RE.sub(lambda m: "_" if word_key(m.group(0)) in list_words else m.group(0), low)
    for phrase in NEUTRAL_PHRASES:
        low = re.sub(phrase, " ", low)
    clauses = CLAUSE_RE.split(f" {low} ")
    for reason, patterns in INTENTS:
        for number, clause in enumerate(clauses):
            if reason in HYPOTHETICAL_REASONS and _supposed(clauses, number):
                continue
            if any(_affirmed(pattern, clause) for pattern in patterns):
                return reason
    for sentence in re.split(r"(?<=[.!?])\s+|\n", low):
        if WANTS_QUANTITY.search(sentence) and not QUESTION_RE.search(sentence):
            return HandoffReason.READY_TO_BUY
    return ""


def _supposed(clauses: list[str], number: int) -> bool:
    """Whether the clause, or the one it continues ("если не подойдёт, можно вернуть?"),
    supposes rather than states."""
    return bool(
        CONDITIONAL_RE.search(clauses[number])
        or (number and CONDITIONAL_RE.search(clauses[number - 1]))
        or (
            number + 1 < len(clauses)
            and CONDITIONAL_RE.match(clauses[number + 1].strip())
            and not POLITE_IF_RE.match(clauses[number + 1].strip())
        )
    )


def shared_terms(reason: str, question: str, text: str) -> bool:
    """Whether a text speaks of the very terms a question asks for ("рассрочка" in both), used
    to see whether a business rule already answers a request for special terms."""
    asked, written = normalise(question), normalise(text)
    patterns = next(p for r, p in INTENTS if r == reason)
    return any(re.search(p, asked) and re.search(p, written) for p in patterns)


def _affirmed(pattern: str, clause: str) -> bool:
    for match in re.finditer(pattern, clause):
        before, after = clause[: match.start()], clause[match.end() :]
        if NEGATION_BEFORE.search(before) or NEGATION_AFTER.match(after):
            continue
        return True
    return False


# A number the terms are of: a share, or a period to pay over ("20%", "на 24 месяца").
TERM_NUMBER_RE = re.compile(
    r"(\d+)\s*(?:%|процент|percent|месяц|мес\b|month|ай\b|айға|айлық)", re.IGNORECASE
)
# A time of day ("к 12:00") is when the customer comes, not a number of the terms asked for.
CLOCK_RE = re.compile(r"\b\d{1,2}[:.]\d{2}\b")


def rules_give_the_terms(message: str, rule: RuleAnswer) -> bool:
    """Whether the rule sentences speak of the terms asked for and of every number of the terms
    in the request: a share, a period to pay over, an amount ("рассрочка на 24 месяца" is not
    answered by "рассрочка 0-0-12", nor "скидку 20%" by "скидка 10%"); how many bottles, an
    age or a time of day are the order, not the terms."""
    if not any(shared_terms(HandoffReason.NON_STANDARD_TERMS, message, s) for s in rule.sentences):
        return False
    text = CLOCK_RE.sub(" ", message)
    shares = set(TERM_NUMBER_RE.findall(text))
    amounts = {str(int(a.value)) for a in find_amounts(text) if a.currency or a.value >= 1000}
    written = {n for s in rule.sentences for n in re.findall(r"\d+", s)}
    written |= {str(int(a.value)) for s in rule.sentences for a in find_amounts(s)}
    return amounts <= written and shares <= _numbers_of_the_terms(message, rule)


def _numbers_of_the_terms(message: str, rule: RuleAnswer) -> set[str]:
    """The numbers a rule states for the terms asked about: just after a word of them or just
    before ("рассрочка на 3 месяца", "10% скидка"), not the "12 месяцев" of the item the
    instalments are for ("безлимит 3 и 12 месяцев можно взять в рассрочку на 3 месяца")."""
    asked = normalise(message)
    patterns = next(p for r, p in INTENTS if r == HandoffReason.NON_STANDARD_TERMS)
    found: set[str] = set()
    for sentence in map(normalise, rule.sentences):
        for pattern in (p for p in patterns if re.search(p, asked)):
            for match in re.finditer(pattern, sentence):
                near = sentence[max(0, match.start() - 12) : match.end() + 50]
                found |= set(re.findall(r"\d+", near))
    return found
