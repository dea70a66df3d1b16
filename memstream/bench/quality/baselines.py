"""The baselines memstream is measured against, over the same events and the same embeddings.

A plain store holds every event it was given as a document — superseded versions and retracted
posts included (a RETRACT event has no content and adds no document) — and searches it by
tenant. Three ways of ranking a tenant's documents:

- ``vector``: cosine similarity (dot product of unit vectors, numpy), top k;
- ``bm25``: Okapi BM25 (k1 = 1.5, b = 0.75, idf = ln(1 + (N − df + 0.5) / (df + 0.5))) over
  ``tokenize``; documents that match no query term are not returned;
- ``rrf``: the two rankings fused by reciprocal rank fusion, k = 60
  (``memstream.services.domain.fusion.rrf``), top k.

Must not import streams or handlers.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from memstream.services.domain.fusion import rrf

K1 = 1.5
B = 0.75
RRF_K = 60
# Latin/digit words, and runs of CJK characters (split into characters and bigrams below).
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+")
_CJK_RUN = re.compile(f"[{_CJK}]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased words (letters/digits; "xr-500" → "xr", "500"), and for each CJK run its
    characters and bigrams ("退货单" → 退, 货, 单, 退货, 货单)."""
    found: list[str] = []
    for match in _TOKEN.finditer(text.lower()):
        token = match.group(0)
        if _CJK_RUN.fullmatch(token):
            found.extend(token)
            found.extend(token[i : i + 2] for i in range(len(token) - 1))
        else:
            found.append(token)
    return found


@dataclass(slots=True)
class BM25:
    """An Okapi BM25 index over one tenant's documents (postings kept as numpy arrays)."""

    ids: list[str]
    lengths: np.ndarray
    average: float
    postings: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str]) -> BM25:
        grouped: dict[str, tuple[list[int], list[int]]] = {}
        lengths = []
        for row, text in enumerate(texts):
            counts = Counter(tokenize(text))
            lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                rows, tfs = grouped.setdefault(term, ([], []))
                rows.append(row)
                tfs.append(tf)
        sizes = np.asarray(lengths, dtype=np.float64)
        average = float(sizes.mean()) if len(sizes) else 0.0
        postings = {
            term: (np.asarray(rows, dtype=np.int64), np.asarray(tfs, dtype=np.float64))
            for term, (rows, tfs) in grouped.items()
        }
        return cls(list(ids), sizes, average, postings)

    def idf(self, term: str) -> float:
        df = len(self.postings[term][0]) if term in self.postings else 0
        n = len(self.ids)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> np.ndarray:
        """Every document's BM25 score for ``query`` (a query term counts once per occurrence)."""
        scores = np.zeros(len(self.ids), dtype=np.float64)
        if not self.ids:
            return scores
        norm = K1 * (1.0 - B + B * self.lengths / (self.average or 1.0))
        for term in tokenize(query):
            posting = self.postings.get(term)
            if posting is None:
                continue
            rows, tf = posting
            scores[rows] += self.idf(term) * tf * (K1 + 1.0) / (tf + norm[rows])
        return scores


def _top(ids: Sequence[str], scores: np.ndarray, k: int, keep: np.ndarray | None) -> list[str]:
    """Ids by score descending (ties: id ascending), those with ``keep`` true, at most k."""
    order = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))
    return [ids[i] for i in order if keep is None or keep[i]][:k]


class TenantCorpus:
    """One tenant's documents as a plain store holds them: ids, texts, unit vectors, BM25."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str], vectors: np.ndarray) -> None:
        if len(ids) != len(texts) or len(ids) != len(vectors):
            raise ValueError("ids, texts and vectors must have the same length")
        self.ids = list(ids)
        self.vectors = vectors.astype(np.float32, copy=False)
        self.bm25 = BM25.build(ids, texts)
        self._row = {doc: row for row, doc in enumerate(self.ids)}

    def _allowed(self, allowed: Collection[str] | None) -> np.ndarray | None:
        if allowed is None:
            return None
        mask = np.zeros(len(self.ids), dtype=bool)
        for doc in allowed:
            row = self._row.get(doc)
            if row is not None:
                mask[row] = True
        return mask

    def vector(
        self, query: np.ndarray, k: int, allowed: Collection[str] | None = None
    ) -> list[str]:
        """Top-k documents by cosine similarity to the (unit) query vector."""
        scores = self.vectors @ query.astype(np.float32) if self.ids else np.zeros(0)
        return _top(self.ids, scores, k, self._allowed(allowed))

    def bm25_rank(self, query: str, k: int, allowed: Collection[str] | None = None) -> list[str]:
        """Top-k documents by BM25; only documents that match a query term."""
        scores = self.bm25.scores(query)
        keep = scores > 0
        mask = self._allowed(allowed)
        return _top(self.ids, scores, k, keep if mask is None else keep & mask)

    def rrf(
        self, query: str, vector: np.ndarray, k: int, allowed: Collection[str] | None = None
    ) -> list[str]:
        """Vector and BM25 rankings (each over the whole tenant) fused by RRF, top k."""
        depth = len(self.ids)
        fused = rrf(
            [self.vector(vector, depth, allowed), self.bm25_rank(query, depth, allowed)], RRF_K
        )
        return list(fused)[:k]


def build_corpora(
    documents: Sequence[tuple[str, str, str]], vectors: Mapping[str, np.ndarray]
) -> dict[str, TenantCorpus]:
    """(tenant_id, doc_id, text) triples → one corpus per tenant (texts' vectors looked up)."""
    by_tenant: dict[str, tuple[list[str], list[str]]] = {}
    for tenant, doc, text in documents:
        ids, texts = by_tenant.setdefault(tenant, ([], []))
        ids.append(doc)
        texts.append(text)
    return {
        tenant: TenantCorpus(ids, texts, np.stack([vectors[t] for t in texts]))
        for tenant, (ids, texts) in by_tenant.items()
    }
