"""A small bilingual (English, Russian, Kazakh) vocabulary of common product words.

Each line is one meaning: its forms in the three languages. A price list named in English is
then found by a customer writing in Russian ("диван угловой" → "Corner sofa") and the reverse.
It holds general words that shops of many kinds use (furniture, clinics, car parts, flowers,
electronics, clothes, food, beauty), never one business's product names: those come from the
list itself, its aliases column and transliteration. Words that only describe (colour,
material, size, position) are marked as attributes: a match made of them alone is weak.
"""

from __future__ import annotations

# meaning → its forms, one word each.
PRODUCTS: dict[str, tuple[str, ...]] = {
    # furniture
    "sofa": ("sofa", "couch", "settee", "диван", "софа", "тахта"),
    "chair": ("chair", "стул", "стульчик", "орындық"),
    "armchair": ("armchair", "кресло", "кресла"),
    "stool": ("stool", "табурет", "табуретка"),
    "table": ("table", "стол", "столик", "үстел"),
    "desk": ("desk", "парта"),
    "wardrobe": ("wardrobe", "closet", "шкаф", "шифоньер", "гардероб", "шкафы"),
    "bed": ("bed", "кровать", "кроватка", "кереует", "төсек"),
    "mattress": ("mattress", "матрас", "матрац", "матрасы"),
    "shelf": ("shelf", "shelves", "shelving", "bookcase", "полка", "стеллаж", "сөре"),
    "dresser": ("dresser", "комод"),
    "mirror": ("mirror", "зеркало", "айна"),
    "lamp": ("lamp", "лампа", "светильник", "торшер", "шам"),
    "nightstand": ("nightstand", "тумба", "тумбочка"),
    "kitchen": ("kitchen", "кухня", "кухонный", "асүй"),
    "coffee": ("coffee", "журнальный"),
    "office": ("office", "офис", "офисный", "кеңсе"),
    "executive": ("executive", "руководителя", "руководитель", "директорское"),
    "computer": ("computer", "компьютерный"),
    "gaming": ("gaming", "игровой"),
    "machine": ("machine", "машина", "машинка"),
    "dining": ("dining", "обеденный"),
    "bar": ("bar", "барный"),
    "door": ("door", "дверь", "дверный", "есік"),
    "seat": ("seat", "seater", "местный"),
    # clinics
    "consultation": ("consultation", "consult", "консультация", "кеңес"),
    "cleaning": ("cleaning", "hygiene", "чистка", "тазалау"),
    "whitening": ("whitening", "bleaching", "отбеливание", "ағарту"),
    "tooth": ("tooth", "teeth", "зуб", "зубы", "тіс"),
    "caries": ("caries", "cavity", "filling", "кариес", "пломба"),
    "extraction": ("extraction", "removal", "remove", "удаление", "удалить", "удалять", "жұлу"),
    "implant": ("implant", "имплант", "имплантация"),
    "xray": ("xray", "x-ray", "снимок", "рентген"),
    "checkup": ("checkup", "check-up", "examination", "осмотр", "тексеру"),
    "treatment": ("treatment", "лечение", "емдеу"),
    "crown": ("crown", "коронка"),
    "zirconia": ("zirconia", "zirconium", "цирконий", "циркониевый"),
    "braces": ("braces", "брекеты", "брекет"),
    "wisdom": ("wisdom", "мудрости", "мудрость"),
    "child": ("child", "children", "kid", "kids", "детский", "ребенок", "детей", "бала"),
    # car parts
    "brake": ("brake", "тормоз", "тормозной", "тежегіш"),
    "pad": ("pad", "колодка", "колодки"),
    "filter": ("filter", "фильтр", "сүзгі"),
    "oil": ("oil", "масло"),
    "oily": ("масляный",),
    "battery": ("battery", "аккумулятор", "акб", "батарея"),
    "wiper": ("wiper", "дворник", "дворники", "стеклоочиститель", "стеклоочистителя"),
    "spark plug": ("spark", "свеча", "свечи"),
    "tire": ("tire", "tyre", "шина", "шины", "резина", "дөңгелек"),
    "engine": ("engine", "motor", "моторный", "мотор", "двигатель"),
    "wheel": ("wheel", "колесо", "диск"),
    # flowers
    "bouquet": ("bouquet", "bunch", "букет", "гүлшоқ"),
    "rose": ("rose", "роза", "розы", "раушан"),
    "tulip": ("tulip", "тюльпан", "тюльпаны", "қызғалдақ"),
    "peony": ("peony", "peonies", "пион", "пионы"),
    "flower": ("flower", "цветок", "цветы", "гүл"),
    "postcard": ("postcard", "card", "открытка", "открыточка", "ашықхат"),
    "teddy bear": ("teddy", "мишка", "медведь", "аю"),
    "orchid": ("orchid", "орхидея"),
    "lily": ("lily", "lilies", "лилия"),
    # electronics
    "phone": ("phone", "smartphone", "телефон", "смартфон"),
    "laptop": ("laptop", "notebook", "ноутбук"),
    "tv": ("tv", "television", "телевизор", "телек", "теледидар"),
    # household appliances
    "vacuum": ("vacuum", "пылесос", "шаңсорғыш"),
    "robot": ("robot", "робот"),
    "kettle": ("kettle", "чайник", "шәйнек"),
    "iron": ("iron", "утюг", "үтік"),
    "fryer": ("fryer", "аэрогриль", "фритюрница"),
    "microwave": ("microwave", "микроволновка", "микроволновая", "свч"),
    "fridge": ("fridge", "refrigerator", "холодильник", "тоңазытқыш"),
    "washing machine": ("washing", "washer", "стиральная", "стиралка", "стиралку"),
    "dishwasher": ("dishwasher", "посудомоечная", "посудомойка"),
    "blender": ("blender", "блендер"),
    "dryer": ("dryer", "фен"),
    "hair": ("hair", "волос", "шаш"),
    "coffee machine": ("espresso", "кофемашина", "кофеварка"),
    "steam": ("steam", "паровой", "парогенератор"),
    "warranty": ("warranty", "гарантия", "кепілдік"),
    "charger": ("charger", "зарядка", "зарядное", "зарядтағыш"),
    "headphones": ("headphones", "earphones", "наушники", "құлаққап"),
    "cable": ("cable", "кабель", "провод"),
    # clothes and shoes
    "shirt": ("shirt", "рубашка", "көйлек"),
    "tshirt": ("t-shirt", "tshirt", "tee", "футболка"),
    "dress": ("dress", "платье"),
    "jacket": ("jacket", "куртка"),
    "trousers": ("trousers", "pants", "брюки", "шалбар"),
    "shoes": ("shoes", "обувь", "туфли", "аяқкиім"),
    "boots": ("boots", "ботинки", "сапоги"),
    # food and drink
    "coffee drink": ("кофе",),
    "tea": ("tea", "чай", "шай"),
    "cake": ("cake", "торт"),
    "water": ("water", "вода"),
    "bread": ("bread", "хлеб", "нан"),
    # beauty and services
    "haircut": ("haircut", "стрижка"),
    "manicure": ("manicure", "маникюр"),
    "massage": ("massage", "массаж"),
    "set": ("set", "kit", "набор", "комплект", "жиынтық"),
}

# Words that, asked for, also mean a narrower thing the same language names apart: a customer
# asking for a "chair" in English may mean an armchair (кресло), one asking for a "стул" does
# not; English "oil" is both масло and масляный (an oil filter), Russian "масло" is not.
QUERY_WIDER: dict[str, tuple[str, ...]] = {
    "chair": ("armchair",),
    "oil": ("oily",),
    "орындық": ("armchair",),
    "table": ("desk",),
}

# Two meanings in one name that together are a third: an "office chair" is a кресло.
NAME_COMPOUNDS: dict[tuple[str, str], str] = {
    ("oil", "filter"): "oily",
    ("office", "chair"): "armchair",
    ("executive", "chair"): "armchair",
    ("computer", "chair"): "armchair",
    ("gaming", "chair"): "armchair",
    ("coffee", "machine"): "coffee machine",
}

ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "white": ("white", "белый", "ақ"),
    "black": ("black", "черный", "қара"),
    "red": ("red", "красный", "қызыл"),
    "blue": ("blue", "синий", "голубой", "көк"),
    "green": ("green", "зеленый", "жасыл"),
    "grey": ("grey", "gray", "серый", "сұр"),
    "brown": ("brown", "коричневый"),
    "pink": ("pink", "розовый"),
    "yellow": ("yellow", "желтый", "сары"),
    "beige": ("beige", "бежевый"),
    "wooden": ("wood", "wooden", "деревянный", "дерево", "ағаш"),
    "oak": ("oak", "дуб", "дубовый", "емен"),
    "leather": ("leather", "кожаный", "кожа", "былғары"),
    "metal": ("metal", "металл", "металлический"),
    "glass": ("glass", "стекло", "стеклянный", "шыны"),
    "large": ("large", "big", "большой", "үлкен"),
    "small": ("small", "маленький", "малый", "кіші"),
    "medium": ("medium", "средний", "орташа"),
    "corner": ("corner", "угловой", "бұрыштық"),
    "front": ("front", "передний", "алдыңғы"),
    "rear": ("rear", "задний", "артқы"),
    "air": ("air", "воздушный", "ауа"),
    "cabin": ("cabin", "салонный", "салона"),
    "mixed": ("mix", "mixed", "микс", "ассорти"),
    "single": ("single", "поштучно", "штучный"),
}
