"""The last check before a reply leaves: every number in it must be derived, or it is not sent.

    result = check(decision, turn)   # GuardrailResult(allowed, blocked=[...human-readable...])

The guardrail proves numbers rather than looking for suspicious ones (docs/guardrails.md). Each
amount of money in the reply (answer, clarify or handoff message alike; read by
`money.find_amounts`, so `40k`, `40 тыс`, `₸40 000`, `1,5 млн` count) must be one of:
- the list price of the item it is said about: the item named between the previous amount and
  this one, else in its sentence, else in the nearest earlier sentence that names one, else in
  the customer's messages, else the one named last in the chat (names across languages and
  scripts, SKUs and aliases: `Catalogue.resolve`). Only when nothing in the chat names an item
  the matcher can read must it merely be some item's price;
- that price × a quantity the customer stated FOR THAT ITEM ("4 chairs" backs 4 × the chair's
  price, not 4 × the table's); a written line "N × P = T" must also have T = N × P;
- a total: an amount after "total / итого / всего / барлығы …" (or one not backed otherwise)
  must equal the sum of the lines the reply listed before it, never "some price";
- an amount written in the business rules, said about what the rules charge it for (a delivery
  fee is not an item's price);
- a price a manager agreed in this chat (`knowledge.agreements`), bound to its item: after it,
  that item's list price is a contradiction.
Percentages, delivery and readiness deadlines, dates and clock times must be written in the
rules, item notes or names, or by a manager. Agreeing to terms the customer asked for and the
rules do not give (a discount, a custom price, a deadline, free delivery; "I can do that",
"договорились", "сделаем скидку", "келістік") is a promise only a manager makes, in English,
Russian and Kazakh; "free delivery" passes only where the rules make it free and the order
reaches their threshold. Business-specific forbidden promises are blocked too (an entry
starting with "re:" is a regex). Amounts in another currency than the list's price are not
backed by it. What cannot be proven is not sent: the turn hands the chat to a manager (reason
`guardrail`) with these findings on the handoff card.

The modules, each one responsibility, importing only those listed before them:
- `finding`: what the check returns (`GuardrailResult`, `Finding`);
- `sentences`: a text cut into sentences, its amounts blanked, its currency signs removed;
- `items`: which items a text names, the quantities the customer gave them, SKUs masked;
- `amounts`: every amount of money proven (prices, quantities, lines, totals, fees, agreements);
- `terms`: percentages, deadlines, dates and clock times written down somewhere;
- `promises`: terms agreed, things promised free or cheaper, deals closed, forbidden promises;
- `check`: the entry points, `check`, `check_against`, `findings` and `proofs`.
Callers import from this package, never from its modules.
"""

from assistant.decision.guardrails.check import check, check_against, findings, proofs
from assistant.decision.guardrails.finding import Finding, GuardrailResult, Proof
from assistant.decision.guardrails.sentences import find_amounts_free
from assistant.decision.guardrails.terms import dates, deadlines, times

__all__ = [
    "Finding",
    "GuardrailResult",
    "Proof",
    "check",
    "check_against",
    "dates",
    "deadlines",
    "find_amounts_free",
    "findings",
    "proofs",
    "times",
]
