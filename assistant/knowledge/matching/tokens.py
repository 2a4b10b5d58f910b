"""A message as tokens: lower-cased words of Latin, Cyrillic (Russian and Kazakh letters) and
digits, digits split from letters ("2шт" → "2", "шт"), each with its stem (a crude suffix
stripper: English plurals, Russian case endings, so "стулья", "стула" and "стул" meet) and the
number it spells ("4", "four", "четыре", "төрт"). The stopwords (question words, never a
product) are listed here too. Functions of the text alone; imports only `assistant.language`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant import language

WORD_RE = re.compile(r"[0-9a-zа-яёәғқңөұүһі]+", re.IGNORECASE)
COMPOUND_RE = re.compile(r"[0-9a-zа-яёәғқңөұүһі]+(?:[-./][0-9a-zа-яёәғқңөұүһі]+)*", re.IGNORECASE)


RU_ENDINGS = sorted(
    ["иями", "ями", "ами", "иях", "ях", "ах", "ого", "его", "ому", "ему", "ыми", "ими", "ых",
     "их", "ым", "им", "ой",
     "ей", "ий", "ый", "ая", "яя", "ое", "ее", "ые", "ие", "ую", "юю", "ов", "ев", "ом", "ем",
     "ам", "ям", "ью", "ья", "ье", "ьи", "а", "я", "ы", "и", "у", "ю", "е", "о", "ь", "й"],
    key=len,
    reverse=True,
)  # fmt: skip

# Words that carry the question, not the product; never used to match an item.
_STOPWORD_LINES = (
    "a an the is are am be do does did you your we our i me my it its this that these those",
    "there here have has had how much many what which who where when why price prices cost costs",
    "of for to from in on at by with and or but not no yes please pls can could would will shall",
    "want need like looking get got buy some any one per each item items thing hi hello hey",
    "thanks thank ok okay tell know about still also just only very available stock again sorry",
    "сколько стоит стоят стоимость цена цены ценой почем есть ли у вас вам нас в во на и а",
    "или но не нет да для мне меня нам нужно нужен нужна нужны хочу хотел хотела хотим можно",
    "какая какой какие каков это этот эта эти что как по за с со от до из о об привет",
    "здравствуйте добрый день вечер утро пожалуйста спасибо подскажите скажите наличии наличие",
    "бар ма ме қанша бағасы сәлем салем сiз сіз сізде рахмет еще тоже уже вот там тут",
    "шт штук штуки штука pcs pieces piece units unit x будет будут было был была надо",
    "show send give write text me us so then if take order total much more else other same",
    "стоить стоили цену цене напишите просто тогда также еще ещё беру возьму заказать купить",
    "покажите скиньте пришлите стал стала стали хорошо ладно ок только лишь тек ғана",
    "тұрады керек маған бізге және ал алғым келеді ба бе па пе",
    # the same question words in Latin letters ("utyug tefal skolko")
    "skolko skoko stoit stoyat stoimost tsena cena tseny ceny est yest nuzhno nuzhen nuzhna",
    "hochu kupit zakazat mozhno pozhaluista pozhalusta privet zdravstvuite u vas nalichii",
)
STOPWORDS = frozenset(" ".join(_STOPWORD_LINES).split())

NUMBER_WORDS: dict[str, int] = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "dozen": 12, "couple": 2, "pair": 2,
    "один": 1, "одна": 1, "одну": 1, "одно": 1, "два": 2, "две": 2, "пару": 2, "пара": 2,
    "три": 3, "четыре": 4, "пять": 5, "шесть": 6, "семь": 7, "восемь": 8, "девять": 9,
    "десять": 10, "дюжину": 12, "двух": 2, "двум": 2, "трех": 3, "трем": 3, "четырех": 4,
    "пяти": 5, "шести": 6, "семи": 7, "восьми": 8, "девяти": 9, "десяти": 10,
    "бір": 1, "екі": 2, "үш": 3, "төрт": 4, "бес": 5, "алты": 6, "жеті": 7, "сегіз": 8,
    "тоғыз": 9, "fifteen": 15, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "hundred": 100, "пятнадцать": 15, "двадцать": 20, "тридцать": 30, "сорок": 40,
    "пятьдесят": 50, "сто": 100, "десяток": 10, "дюжина": 12, "жиырма": 20, "отыз": 30,
    "қырық": 40, "елу": 50, "жүз": 100,
    # Kazakh in Latin letters ("bes gruzchik", "eki dana"); not "on" (English "on") nor
    # "tort" (a cake, "торт", in Latin letters)
    "eki": 2, "ush": 3, "bes": 5, "alty": 6, "zheti": 7, "jeti": 7,
    "segiz": 8, "togyz": 9, "toghyz": 9,
    # people counted together: "стрижка на двоих", "нам обеим маникюр", "трое детей"
    "двое": 2, "двоих": 2, "трое": 3, "троих": 3, "четверо": 4, "четверых": 4, "пятеро": 5,
    "пятерых": 5, "обеим": 2, "обоим": 2, "екеуміз": 2, "үшеуміз": 3,
    "двумя": 2, "тремя": 3, "четырьмя": 4, "пятью": 5,
}  # fmt: skip
# Words that multiply the count before them: "2 dozen", "три десятка".
COUNT_MULTIPLIERS: dict[str, int] = {
    "dozen": 12, "dozens": 12, "дюжины": 12, "дюжин": 12, "десятка": 10, "десятков": 10,
}  # fmt: skip


def normalise(text: str) -> str:
    return text.lower().replace("ё", "е")


def stem(word: str) -> str:
    w = normalise(word)
    if w.isdigit() or len(w) <= 3:
        return w
    if language.is_cyrillic(w):
        for ending in RU_ENDINGS:
            if w.endswith(ending) and len(w) - len(ending) >= 3:
                return w[: -len(ending)]
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "sses", "xes")):
        return w[:-2]
    if w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


_DIGIT_LETTER = re.compile(r"(?<=\d)(?=[^\W\d_])|(?<=[^\W\d_])(?=\d)")


def words(text: str) -> list[str]:
    """Words, with digits split from letters ("x2" → "x", "2"; "2шт" → "2", "шт")."""
    return WORD_RE.findall(_DIGIT_LETTER.sub(" ", normalise(text)))


def compact(text: str) -> str:
    """A code with its separators removed: "CH-101" → "ch101"."""
    return re.sub(r"[^0-9a-zа-яёәғқңөұүһі]", "", normalise(text))


@dataclass(frozen=True)
class QueryToken:
    position: int
    word: str
    stem: str
    number: int | None


def analyse(text: str) -> list[QueryToken]:
    tokens = []
    # "он" is ten in Kazakh ("он үлкен коробка") and "he" in Russian.
    ten = "он" in words(text) and bool(
        language.KAZAKH_LETTERS.search(text) or language.is_kazakh(text)
    )
    for position, word in enumerate(words(text)):
        number = int(word) if word.isdigit() and len(word) <= 9 else NUMBER_WORDS.get(word)
        if word == "он" and ten:
            number = 10
        tokens.append(QueryToken(position, word, stem(word), number))
    return tokens
