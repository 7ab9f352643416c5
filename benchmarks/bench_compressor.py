"""The §5.2 extractive compressor measured on real English text: latency, fidelity and p_c.

    python benchmarks/bench_compressor.py [--json out.json]

Corpus (offline, no downloads): documents of 2,000–8,000 tokens cut at sentence ends from
CPython's ``pydoc_data`` topics (the language reference, concatenated in topic order), the two
papers in ``../shared/papers`` (when present) and the project's own docs (their plain-text
paragraphs), plus Python source (the standard library's) to check the content gate. Tokens are
cl100k_base (tiktoken, from LiteLLM's bundled copy) when available, else ⌈bytes / 4⌉.

1. Fidelity against the cut: every prose document compressed by 5 … 50% of its tokens; ROUGE-L
   recall (word LCS / words of the original; for a compressor that only deletes sentences it is
   the share of words kept, so it restates the cut), TF-IDF cosine with the original (IDF over the
   corpus; FleetOpt Table 7's third metric) and the recall of the document's 20 highest-TF-IDF
   words (does the compressed prompt still name what the document is about?).
2. Latency (CPU time, one core) of compressing the C&R band's prompts at the Azure setting
   (B = 4,096, γ = 1.9): each document whose total with an Azure-trace output length falls in the
   band, compressed to B − L_out; p50/p95/p99 by prompt size, against FleetOpt Table 4.
3. p_c: the share of band requests compressed within budget, for prose and for code, with and
   without a cap on the cut.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from gateway_mocks import prose_corpus  # noqa: E402

from fleetopt.core.compressor import bytes_token_counter, compress_text, split_sentences  # noqa: E402
from fleetopt.core.estimator import classify_text  # noqa: E402

CUTS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40, 0.50)
B_SHORT, GAMMA = 4096, 1.9
_WORD = re.compile(r"\w+")


def token_counter():
    """(name, count): cl100k_base through tiktoken when LiteLLM's copy is installed, else bytes/4."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("litellm")  # its bundled cl100k_base file, without importing it
        os.environ.setdefault(
            "TIKTOKEN_CACHE_DIR", str(Path(spec.origin).parent / "litellm_core_utils" / "tokenizers")
        )
        import tiktoken

        encoding = tiktoken.get_encoding("cl100k_base")
        return "cl100k_base", lambda text: len(encoding.encode(text, disallowed_special=()))
    except Exception:  # noqa: BLE001 - any failure: the byte estimate
        return "bytes/4", lambda text: math.ceil(len(text.encode("utf-8")) / 4)


def documents(text: str, count, source: str, lo: int = 2000, hi: int = 8000, rng=None) -> list[dict]:
    """Consecutive documents of lo…hi tokens (lengths drawn uniformly) cut at sentence ends."""
    rng = rng or np.random.default_rng(0)
    sentences = split_sentences(text)
    docs, current, tokens = [], [], 0
    target = int(rng.integers(lo, hi))
    for sentence in sentences:
        current.append(sentence)
        tokens += count(sentence)
        if tokens >= target:
            body = "".join(current)
            docs.append({"source": source, "text": body, "tokens": count(body)})
            current, tokens, target = [], 0, int(rng.integers(lo, hi))
    return [d for d in docs if lo <= d["tokens"] <= hi * 1.05]


def corpus(count) -> list[dict]:
    import pydoc_data.topics as topics

    rng = np.random.default_rng(1)
    docs = documents(
        "\n\n".join(topics.topics[k] for k in sorted(topics.topics)), count, "pydoc_data", rng=rng
    )
    papers = REPO.parent / "shared" / "papers"
    for paper in sorted(papers.glob("*.txt")) if papers.is_dir() else []:
        docs += documents(paper.read_text(encoding="utf-8"), count, f"papers/{paper.stem[:12]}", rng=rng)
    docs += documents(prose_corpus(REPO), count, "fleetopt docs", rng=rng)
    return docs


def code_documents(count) -> list[dict]:
    import json as stdlib_json  # any standard-library package's source will do

    root = Path(stdlib_json.__file__).resolve().parents[1]
    text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.glob("*.py"))[:60])
    return documents(text, count, "stdlib source", rng=np.random.default_rng(2))[:40]


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def lcs_length(reference: list[str], candidate: list[str]) -> int:
    """Length of the longest common subsequence (Hyyrö's bit-parallel algorithm, exact)."""
    masks: dict[str, int] = {}
    for i, w in enumerate(reference):
        masks[w] = masks.get(w, 0) | (1 << i)
    n = len(reference)
    full = (1 << n) - 1
    v = full
    for w in candidate:
        u = v & masks.get(w, 0)
        v = ((v + u) | (v - u)) & full
    return n - bin(v).count("1")


def tfidf(docs_words: list[list[str]]):
    df = Counter()
    for ws in docs_words:
        df.update(set(ws))
    n = len(docs_words)
    return {w: math.log((1 + n) / (1 + c)) + 1 for w, c in df.items()}


def cosine(a: Counter, b: Counter, idf: dict) -> float:
    dot = sum(a[w] * b.get(w, 0) * idf.get(w, 1.0) ** 2 for w in a)
    na = math.sqrt(sum((c * idf.get(w, 1.0)) ** 2 for w, c in a.items()))
    nb = math.sqrt(sum((c * idf.get(w, 1.0)) ** 2 for w, c in b.items()))
    return dot / (na * nb) if na and nb else 0.0


def fidelity(docs, count) -> list[dict]:
    all_words = [words(d["text"]) for d in docs]
    idf = tfidf(all_words)
    rows = []
    for cut in CUTS:
        rouge, cos, top, fits = [], [], [], 0
        for d, ws in zip(docs, all_words, strict=True):
            result = compress_text(d["text"], int(d["tokens"] * (1 - cut)), count)
            if not result.fits:
                continue
            fits += 1
            cw = words(result.text)
            rouge.append(lcs_length(ws, cw) / len(ws))
            original, compressed = Counter(ws), Counter(cw)
            cos.append(cosine(original, compressed, idf))
            key = sorted(original, key=lambda w: -original[w] * idf[w])[:20]
            top.append(sum(1 for w in key if w in compressed) / len(key))
        rows.append(
            {
                "cut": cut, "documents": len(docs), "compressed": fits,
                "rouge_l_recall": _q(rouge), "tfidf_cosine": _q(cos), "top20_terms_kept": _q(top),
            }
        )  # fmt: skip
    return rows


def _q(values) -> dict:
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {}
    return {"mean": float(a.mean()), "p10": float(np.quantile(a, 0.1)), "p50": float(np.median(a)),
            "p90": float(np.quantile(a, 0.9))}  # fmt: skip


def azure_outputs() -> np.ndarray:
    with gzip.open(REPO / "workloads" / "azure-2023-conv.csv.gz", "rt") as f:
        return np.array([int(r["output_tokens"]) for r in csv.DictReader(f)])


def band_requests(docs, outputs, rng) -> list[tuple[dict, int]]:
    """Each document with an Azure output length drawn until its total lands in the C&R band."""
    top = math.floor(GAMMA * B_SHORT)
    out = []
    for d in docs:
        for _ in range(50):
            o = int(rng.choice(outputs))
            if B_SHORT < d["tokens"] + o <= top and o < B_SHORT:
                out.append((d, o))
                break
    return out


def latency(requests, count, repeats: int = 5) -> dict:
    """CPU time of compress_text per band request (``count``: how sentences are counted)."""
    timings: dict[str, list[float]] = {"2K–4K": [], "4K–6K": [], "6K–8K": [], "all": []}
    for d, o in requests:
        target = B_SHORT - o
        compress_text(d["text"], target, count)  # warm caches
        for _ in range(repeats):
            start = time.process_time()
            compress_text(d["text"], target, count)
            ms = (time.process_time() - start) * 1000
            size = "2K–4K" if d["tokens"] < 4000 else "4K–6K" if d["tokens"] < 6000 else "6K–8K"
            timings[size].append(ms)
            timings["all"].append(ms)
    return {
        k: {"n": len(v), **{f"p{q}": float(np.percentile(v, q)) for q in (50, 95, 99)}}
        for k, v in timings.items()
        if v
    }


def p_c(requests, count, caps=(1.0, 0.5, 0.3, 0.25, 0.2, 0.15)) -> dict:
    result = {}
    for cap in caps:
        ok = 0
        for d, o in requests:
            need = d["tokens"] + o - B_SHORT
            if need > cap * d["tokens"] or classify_text(d["text"]) != "prose":
                continue
            ok += compress_text(d["text"], B_SHORT - o, count).fits
        result[f"{cap:g}"] = ok / len(requests) if requests else float("nan")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()
    name, count = token_counter()
    docs = corpus(count)
    code = code_documents(count)
    categories = Counter(classify_text(d["text"]) for d in docs)
    code_categories = dict(Counter(classify_text(d["text"]) for d in code))
    sources = dict(Counter(d["source"] for d in docs))
    print(
        f"tokens: {name}; {len(docs)} prose documents of 2K–8K tokens ({sources}), classified "
        f"{dict(categories)}; {len(code)} code documents, classified {code_categories}"
    )
    rows = fidelity(docs, count)
    print("\nfidelity against the cut (mean / p10):")
    print(f"{'cut':>5} {'n':>4} {'ROUGE-L recall':>16} {'TF-IDF cosine':>16} {'top-20 terms':>16}")
    for r in rows:
        cells = [
            f"{r[k]['mean']:8.3f} / {r[k]['p10']:5.3f}"
            for k in ("rouge_l_recall", "tfidf_cosine", "top20_terms_kept")
        ]
        print(f"{r['cut']:5.0%} {r['compressed']:4d} " + " ".join(cells))
    rng = np.random.default_rng(3)
    outputs = azure_outputs()
    prose_band = band_requests(docs, outputs, rng)
    code_band = band_requests(code, outputs, rng)
    cuts = [(d["tokens"] + o - B_SHORT) / d["tokens"] for d, o in prose_band]
    print(f"\nC&R band at B = {B_SHORT}, γ = {GAMMA}: {len(prose_band)} prose requests, cut needed mean "
          f"{np.mean(cuts):.1%}, p50 {np.median(cuts):.1%}, p90 {np.quantile(cuts, 0.9):.1%}")  # fmt: skip
    print("latency, ms of CPU (FleetOpt Table 4, Azure: p50 1.8, p95 4.2, p99 6.5):")
    lat = {}
    for how, counter in (("bytes / 3.4 (the gateway's estimate)", bytes_token_counter(3.4)), (name, count)):
        lat[how] = latency(prose_band, counter)
        print(f"  sentences counted by {how}:")
        for k, v in lat[how].items():
            print(f"  {k:>8}: n {v['n']:4d}  p50 {v['p50']:.2f}  p95 {v['p95']:.2f}  p99 {v['p99']:.2f}")
    pcs = {"prose": p_c(prose_band, count), "code": p_c(code_band, count)}
    print("p_c (compressed within budget) by cap on the cut:")
    for kind, values in pcs.items():
        print(f"  {kind:>5}: " + "  ".join(f"cap {k}: {v:.3f}" for k, v in values.items()))
    if args.json:
        band_cut = {"mean": float(np.mean(cuts)), "p90": float(np.quantile(cuts, 0.9))}
        figures = {"tokens": name, "fidelity": rows, "latency_ms": lat, "p_c": pcs, "band_cut": band_cut}
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
