#!/usr/bin/env python3
"""Writes testdata/hf/references/*.json: what `transformers.pipeline(...)` returns for the tiny
models of scripts/make_tiny_hf_models.py, and what `tokenizers` returns (ids, offsets) for their
tokenizer.json files on a multilingual set. The C++ tests (tests/inference/hf_*_test.cc) compare
dfworker's results with these files: labels, tokens and offsets exactly, scores within 1e-4.

Each pipeline reference: {"model": DIR (relative to testdata/hf), "task": T, "args": {...},
"inputs": [...], "outputs": [pipeline(x, **args) for x in inputs]} — one call per input, so each
output is what the pipeline returns for that element alone.

Usage: python3 scripts/hf_pipeline_references.py [HF_DIR]   (default testdata/hf)
"""
import json
import os
import sys

from tokenizers import Tokenizer
from transformers import pipeline

TEXTS = [
    "I love this movie, it is wonderful.",
    "This film was terrible and boring.",
    "Barack Obama was born in Hawaii.",
    "Angela Merkel visited Paris with Emmanuel Macron on Monday.",
    "Crème brûlée, naïve café — résumé.",
    "我爱北京天安门 and 東京",
    "Emoji 😀🎉 test, مرحبا שלום!",
    "  spaces\tand\nnewlines  ",
    "Apple Inc. is based in Cupertino, California.",
]
TOKENIZER_TEXTS = TEXTS + ["", "   ", "UPPER lower MiXeD", "don't stop, it's 3.14!", "a\u00a0b\u2003c", "x" * 120]
PAIRS = [("The team won the football match.", "This example is about sports."),
         ("Crème brûlée", "This example is about cooking.")]

BERT_MASKS = ["The capital of France is [MASK].", "I love this [MASK], it is great.", "Hello [MASK]!"]
ROBERTA_MASKS = ["The capital of France is <mask>.", "I love this <mask>, it is great.", "Hello <mask>!"]

CASES = []
for arch in ("bert", "distilbert", "roberta", "xlmr", "modernbert"):
    CASES += [
        (f"{arch}-text-classification", f"{arch}-sequence-classification", "text-classification", {}, TEXTS),
        (f"{arch}-text-classification-top2-sigmoid", f"{arch}-sequence-classification", "text-classification",
         {"top_k": 2, "function_to_apply": "sigmoid"}, TEXTS[:4]),
        (f"{arch}-text-classification-all-none", f"{arch}-sequence-classification", "text-classification",
         {"top_k": None, "function_to_apply": "none"}, TEXTS[:3]),
        (f"{arch}-ner-none", f"{arch}-token-classification", "token-classification", {}, TEXTS),
        (f"{arch}-fill-mask", f"{arch}-masked-lm", "fill-mask", {"top_k": 3},
         ROBERTA_MASKS if arch in ("roberta", "xlmr") else BERT_MASKS),
        (f"{arch}-feature-extraction", f"{arch}-masked-lm", "feature-extraction", {}, TEXTS[:3]),
    ]
    for strategy in ("simple", "first", "average", "max"):
        CASES.append((f"{arch}-ner-{strategy}", f"{arch}-token-classification", "token-classification",
                      {"aggregation_strategy": strategy}, TEXTS))
CASES += [
    ("bert-ner-ignore-none", "bert-token-classification", "token-classification",
     {"aggregation_strategy": "simple", "ignore_labels": []}, TEXTS[:3]),
    ("bert-fill-mask-targets", "bert-masked-lm", "fill-mask", {"targets": ["paris", "the", "movie"]}, BERT_MASKS),
    ("bert-zero-shot", "bert-nli", "zero-shot-classification",
     {"candidate_labels": ["sports", "politics", "cooking"]}, TEXTS[:4]),
    ("bert-zero-shot-multi", "bert-nli", "zero-shot-classification",
     {"candidate_labels": ["sports", "politics", "cooking"], "multi_label": True,
      "hypothesis_template": "The topic is {}."}, TEXTS[:4]),
    ("roberta-zero-shot", "roberta-nli", "zero-shot-classification",
     {"candidate_labels": ["sports", "technology"]}, TEXTS[:4]),
    ("xlmr-zero-shot", "xlmr-nli", "zero-shot-classification",
     {"candidate_labels": ["sports", "technology", "cooking"]}, TEXTS[:4]),
    ("modernbert-zero-shot", "modernbert-nli", "zero-shot-classification",
     {"candidate_labels": ["sports", "politics", "cooking"]}, TEXTS[:4]),
]
# Arguments that go to the pipeline's constructor rather than its call.
INIT_ARGS = {"aggregation_strategy", "ignore_labels"}


def plain(x):
    """numpy/torch scalars and arrays → JSON types."""
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if hasattr(x, "tolist"):
        return x.tolist()
    return x


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "testdata/hf"
    out_dir = os.path.join(root, "references")
    os.makedirs(out_dir, exist_ok=True)
    for name, model, task, args, inputs in CASES:
        init = {k: v for k, v in args.items() if k in INIT_ARGS}
        call = {k: v for k, v in args.items() if k not in INIT_ARGS}
        pipe = pipeline(task, model=os.path.join(root, model), device="cpu", **init)
        outputs = [plain(pipe(x, **call)) for x in inputs]
        with open(os.path.join(out_dir, name + ".json"), "w", encoding="utf-8") as f:
            json.dump({"model": model, "task": task, "args": args, "inputs": inputs, "outputs": outputs}, f,
                      ensure_ascii=False, separators=(",", ":"))
        print("wrote", name)
    for arch in ("bert", "roberta", "xlmr"):
        tok = Tokenizer.from_file(os.path.join(root, f"{arch}-masked-lm", "tokenizer.json"))
        rows = []
        for t in TOKENIZER_TEXTS:
            e = tok.encode(t)
            rows.append({"text": t, "ids": e.ids, "type_ids": e.type_ids, "offsets": e.offsets, "words": e.word_ids})
        for a, b in PAIRS:
            e = tok.encode(a, b)
            rows.append({"text": a, "pair": b, "ids": e.ids, "type_ids": e.type_ids, "offsets": e.offsets})
        with open(os.path.join(out_dir, f"{arch}-tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump({"tokenizer": f"{arch}-masked-lm/tokenizer.json", "rows": rows}, f, ensure_ascii=False, separators=(",", ":"))
        print("wrote", arch, "tokenizer")


if __name__ == "__main__":
    main()
