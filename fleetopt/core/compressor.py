"""FleetOpt §5.2's extractive prompt compressor: keep the sentences that matter, within a token budget.

Given a prompt and a token budget T_c (B − ``max_tokens`` in Compress-and-Route, FleetOpt Eq. 15):

1. split the text into sentences (Unicode-aware heuristics: a run ending in . ! ? … 。 ！ ？ followed
   by white space, or a line break; a sentence keeps the white space after it, so the kept ones
   join back exactly);
2. score each sentence by 0.20·TextRank + 0.40·position + 0.35·TF-IDF + 0.05·novelty (the paper's
   weights), each score scaled to [0, 1] over the prompt:

   - TextRank (Mihalcea and Tarau 2004): PageRank (damping 0.85) over the sentence graph whose
     edge weight is the word overlap |S_i ∩ S_j| / (ln(1 + |S_i|) + ln(1 + |S_j|));
   - position: 1 at either end of the prompt, 0 in the middle (primacy and recency; the paper
     gives the weight, not the shape — this U shape is our choice);
   - TF-IDF: the mean over the sentence's words of term frequency × (ln((1 + n)/(1 + df)) + 1),
     sentences as documents;
   - novelty: 1 − the largest TF-IDF cosine similarity with any earlier sentence;
3. keep the first 3 and the last 2 sentences, then add sentences in score order while they fit;
4. stop when nothing more fits the budget. The kept sentences are returned in their order.

Pure Python and numpy/scipy (no model, no download), so the gateway, the simulator and the
benchmarks share it. ``count_tokens`` says how long a piece of text is: a tokenizer's exact count,
or the gateway's conservative byte estimate (:mod:`fleetopt.core.estimator`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: FleetOpt §5.2's sentence-score weights.
TEXTRANK_WEIGHT = 0.20
POSITION_WEIGHT = 0.40
TFIDF_WEIGHT = 0.35
NOVELTY_WEIGHT = 0.05
#: Sentences always kept at the start and at the end (FleetOpt §5.2, primacy/recency invariant).
KEEP_FIRST = 3
KEEP_LAST = 2
#: TextRank's damping factor and iterations (PageRank's usual 0.85; converges well within 30).
TEXTRANK_DAMPING = 0.85
TEXTRANK_ITERATIONS = 30
TEXTRANK_TOLERANCE = 1e-6

#: Where a sentence ends: after . ! ? … (and closing quotes or brackets) followed by white space,
#: after 。！？ (CJK text has no spaces), or at a line break; the white space that follows belongs to
#: the sentence before it.
_BOUNDARY = re.compile(r"(?:[.!?…]+[\"'”’)\]]*\s+|[。！？]+[」』”’)）]*\s*|\n\s*)")
_WORD = re.compile(r"\w+", re.UNICODE)
#: A short English stop list: words that say nothing about which sentence matters.
_STOP = frozenset(
    "a an and are as at be but by for from has have he her his i if in into is it its me my not "
    "of on or our she so than that the their them then there these they this those to was we were "
    "what when which who will with would you your can do does did been being also just more most "
    "other some such only own same too very s t".split()
)


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, each with the white space after it: ``"".join`` gives the text back."""
    pieces = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        end = match.end()
        if end > start:
            pieces.append(text[start:end])
            start = end
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def sentence_scores(sentences: list[str]) -> np.ndarray:
    """The composite score of every sentence (FleetOpt §5.2's weights; module docstring)."""
    n = len(sentences)
    if n == 0:
        return np.zeros(0)
    if n == 1:
        return np.ones(1)
    from scipy import sparse

    per_sentence = [_WORD.findall(sentence.lower()) for sentence in sentences]
    flat = [w for words in per_sentence for w in words]
    vocabulary = {w: i for i, w in enumerate(dict.fromkeys(flat))}
    columns = np.fromiter(map(vocabulary.__getitem__, flat), dtype=np.int64, count=len(flat))
    rows = np.repeat(np.arange(n), [len(words) for words in per_sentence])
    counts = sparse.csr_matrix((np.ones(len(flat)), (rows, columns)), shape=(n, max(1, len(vocabulary))))
    counts.sum_duplicates()
    stop = [vocabulary[w] for w in _STOP if w in vocabulary]
    if stop:  # stop words say nothing about which sentence matters: drop their columns
        keep = np.ones(counts.shape[1], dtype=bool)
        keep[stop] = False
        counts = counts[:, keep]
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    present = counts.copy()
    present.data[:] = 1.0
    df = np.asarray(present.sum(axis=0)).ravel()
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0

    # TF-IDF: mean weight of the sentence's words
    weighted = counts.multiply(idf[None, :]).tocsr()
    tfidf = np.asarray(weighted.sum(axis=1)).ravel() / np.maximum(lengths, 1.0)

    # novelty: 1 − the largest cosine similarity with an earlier sentence
    norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1)).ravel())
    unit = sparse.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ weighted
    novelty = 1.0 - _row_max_below_diagonal((unit @ unit.T).tocsr(), n)
    novelty[0] = 1.0

    # TextRank over word overlaps (sparse: sentences that share no word have no edge)
    overlap = (present @ present.T).tocoo()
    i, j = overlap.row, overlap.col
    off = i != j
    i, j = i[off], j[off]
    log_len = np.log1p(lengths)
    weight = overlap.data[off] / np.maximum(log_len[i] + log_len[j], 1e-12)
    out_weight = np.bincount(i, weights=weight, minlength=n)
    transition = sparse.csr_matrix((weight / out_weight[i], (j, i)), shape=(n, n))  # transposed
    rank = np.full(n, 1.0 / n)
    for _ in range(TEXTRANK_ITERATIONS):
        previous = rank
        rank = (1.0 - TEXTRANK_DAMPING) / n + TEXTRANK_DAMPING * (transition @ rank)
        if float(np.abs(rank - previous).sum()) < TEXTRANK_TOLERANCE:
            break

    index = np.arange(n, dtype=float)
    position = 1.0 - np.minimum(index, n - 1 - index) / ((n - 1) / 2.0)

    def scaled(values: np.ndarray) -> np.ndarray:
        lo, hi = float(values.min()), float(values.max())
        return np.zeros_like(values) if hi <= lo else (values - lo) / (hi - lo)

    return (
        TEXTRANK_WEIGHT * scaled(rank)
        + POSITION_WEIGHT * np.clip(position, 0.0, 1.0)
        + TFIDF_WEIGHT * scaled(tfidf)
        + NOVELTY_WEIGHT * np.clip(novelty, 0.0, 1.0)
    )


def _row_max_below_diagonal(matrix, n: int) -> np.ndarray:
    """max_{j < i} matrix[i, j] for each row i of a CSR matrix with entries ≥ 0 (0 when none)."""
    rows = np.repeat(np.arange(n), np.diff(matrix.indptr))
    values = np.where(matrix.indices < rows, matrix.data, 0.0)
    result = np.zeros(n)
    nonempty = np.flatnonzero(np.diff(matrix.indptr) > 0)
    if nonempty.size:
        result[nonempty] = np.maximum.reduceat(values, matrix.indptr[nonempty])
    return result


@dataclass(frozen=True)
class Compression:
    """What the compressor did to one text.

    Attributes:
        text: the compressed text (the original when ``fits`` is False).
        original_tokens: ``count_tokens`` of the original.
        tokens: ``count_tokens`` of the result, the sum over its kept sentences.
        budget_tokens: the budget asked for.
        sentences: sentences in the original.
        kept_sentences: sentences kept.
        fits: True when the result fits the budget (always when the original already did).
    """

    text: str
    original_tokens: int
    tokens: int
    budget_tokens: int
    sentences: int
    kept_sentences: int
    fits: bool

    @property
    def cut_fraction(self) -> float:
        """Share of the original's tokens removed."""
        return 1.0 - self.tokens / self.original_tokens if self.original_tokens > 0 else 0.0


def compress_text(text: str, budget_tokens: int, count_tokens: Callable[[str], int]) -> Compression:
    """Compress ``text`` to at most ``budget_tokens`` (by ``count_tokens``) by dropping sentences.

    Returns the original, ``fits`` False, when the first 3 and last 2 sentences alone exceed the
    budget (the compressor never cuts inside a sentence)."""
    sentences = split_sentences(text)
    counts = [count_tokens(s) for s in sentences]
    total = sum(counts)
    n = len(sentences)
    if total <= budget_tokens:
        return Compression(text, total, total, budget_tokens, n, n, True)
    keep = np.zeros(n, dtype=bool)
    keep[: min(KEEP_FIRST, n)] = True
    keep[max(0, n - KEEP_LAST) :] = True
    used = sum(c for c, k in zip(counts, keep, strict=True) if k)
    if used > budget_tokens:
        return Compression(text, total, total, budget_tokens, n, n, False)
    scores = sentence_scores(sentences)
    for i in np.argsort(-scores, kind="stable"):
        if not keep[i] and used + counts[i] <= budget_tokens:
            keep[i] = True
            used += counts[i]
    kept = [s for s, k in zip(sentences, keep, strict=True) if k]
    return Compression("".join(kept), total, used, budget_tokens, n, len(kept), True)


def bytes_token_counter(bytes_per_token: float) -> Callable[[str], int]:
    """``count_tokens`` from UTF-8 bytes: ⌈bytes / ratio⌉ (the gateway's estimate without a tokenizer)."""
    if not (bytes_per_token > 0 and math.isfinite(bytes_per_token)):
        raise ValueError(f"bytes per token: {bytes_per_token!r} must be positive")

    def count(text: str) -> int:
        return math.ceil(len(text.encode("utf-8")) / bytes_per_token)

    return count
