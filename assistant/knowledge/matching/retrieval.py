"""BM25 over a price list's texts (name, aliases, SKU, description): the items a prompt carries
when the list is too big to send whole. Query words the texts lack are widened to the list's
words within a typo."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from assistant.knowledge.matching.keys import content_tokens, keys_match, word_key
from assistant.knowledge.matching.tokens import analyse, words


class Bm25:
    """BM25 (k1=1.2, b=0.75) over one document per item."""

    def __init__(self, documents: Sequence[str]) -> None:
        self.doc_tokens = [[word_key(w) for w in words(d)] for d in documents]
        self.doc_len = [len(d) for d in self.doc_tokens]
        self.avg_len = (sum(self.doc_len) / len(self.doc_len)) if self.doc_len else 1.0
        doc_df: Counter[str] = Counter()
        for d in self.doc_tokens:
            doc_df.update(set(d))
        self.doc_df = doc_df
        self.doc_tf = [Counter(d) for d in self.doc_tokens]

    def top(self, text: str, k: int, vocabulary: Iterable[str]) -> list[int]:
        """Indices of the k documents that score best for the text."""
        query = [word_key(t.word) for t in content_tokens(analyse(text))]
        query += [t.word for t in analyse(text) if t.word.isdigit()]
        if not query:
            return []
        known = list(vocabulary)
        expanded: list[str] = []
        for q in query:
            if q in self.doc_df:
                expanded.append(q)
                continue
            close = [s for s in known if keys_match(q, s, fuzzy=True)]
            expanded.extend(close[:3])
        n = len(self.doc_tokens)
        scores: list[tuple[float, int]] = []
        for i, tf in enumerate(self.doc_tf):
            score = 0.0
            for q in expanded:
                f = tf.get(q, 0)
                if not f:
                    continue
                idf = math.log(1 + (n - self.doc_df[q] + 0.5) / (self.doc_df[q] + 0.5))
                norm = 1.2 * (1 - 0.75 + 0.75 * self.doc_len[i] / self.avg_len)
                score += idf * f * 2.2 / (f + norm)
            if score > 0:
                scores.append((score, i))
        scores.sort(key=lambda s: (-s[0], s[1]))
        return [i for _, i in scores[:k]]
