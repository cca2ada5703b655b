#!/usr/bin/env python3
"""Compares dfworker's BERT encoder with sentence-transformers on the real all-MiniLM-L6-v2.

Builds >= 200 varied sentences (accents, punctuation, CJK, emoji, control characters, very long
text), embeds them with sentence-transformers, writes the reference (tokens + embeddings) to a
temporary JSON file and runs the optional gtest BertMiniLM.* of the inference test binary on it,
which asserts identical token ids and cosine >= 0.9999 for every sentence and prints the min/mean.

Usage (with the venv made by scripts/fetch_minilm.sh, which has sentence-transformers):
  CACHE=~/.cache/dfworker; scripts/fetch_minilm.sh $CACHE
  $CACHE/venv/bin/python scripts/check_minilm.py --model $CACHE/all-MiniLM-L6-v2 \
      --tests build/tests/inference/dfw_inference_tests [--backend cpu|cuda]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

BASE = [
    "A man is eating food.", "A man is riding a white horse on an enclosed ground.",
    "The new movie is awesome!", "The cat sits outside.", "Who was the first president of the USA?",
    "Crème brûlée, naïve café — résumé.", "¿Dónde está la biblioteca?", "Straße in München, Österreich",
    "Ünïcödé Àççéñts everywhere: Ångström, Øresund, Łódź", "我爱北京天安门", "東京は日本の首都です。",
    "机器学习是人工智能的一个分支", "한국어 문장을 테스트합니다", "Ελληνικά κείμενα ΟΔΟΣ", "Русский текст для проверки",
    "Emoji test 😀🎉👍 ❤️ 👨‍👩‍👧", "email@example.com http://x.y/z?q=1&r=2", "Numbers 3.14159 and 1,000,000 and 42",
    "I can't won't shouldn't", "«Quotes» “curly” ‘single’", "$100 + 50% = ^_^ ~`|\\", "Tabs\tand\nnewlines\r\nmixed",
    "zero\u200bwidth and soft\u00adhyphen", "non\u00a0breaking space", "control\x01chars\x7fhere", "", "   ",
    "a", "UPPER lower MiXeD", "Punctuation!!! ??? ... ,,, ;;; :::", "x" * 150, "İstanbul",
    "The quick brown fox jumps over the lazy dog.", "Dataflow runs Apache Beam pipelines on Google Cloud.",
    "GPUs accelerate transformer inference with batched matrix multiplications.",
]
WORDS = ("search retrieval embedding vector model sentence query document ranking semantic similarity "
         "neural network training inference batch latency throughput memory GPU CPU pipeline worker "
         "résumé naïve café façade jalapeño piñata über coöperate 日本 中文 한국 😀 🚀 — … « » ¡ ¿ "
         "don't it's 3.5 100% #hashtag @user C++ e-mail").split()


def sentences(n):
    rng = random.Random(7)
    out = list(BASE)
    while len(out) < n:
        k = rng.choice([3, 8, 15, 30, 60, 200])  # 200 words: longer than max_seq_length, truncated
        out.append(" ".join(rng.choice(WORDS) for _ in range(k)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="model directory from scripts/fetch_minilm.sh")
    ap.add_argument("--tests", default="build/tests/inference/dfw_inference_tests")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("-n", type=int, default=256)
    args = ap.parse_args()

    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(args.model, device="cpu")
    max_seq = model.max_seq_length
    texts = sentences(args.n)
    emb = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    cases = []
    for text, e in zip(texts, emb):
        ids = model.tokenizer(text, truncation=True, max_length=max_seq)["input_ids"]
        cases.append({"text": text, "ids": ids, "embedding": [float(v) for v in e]})
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump({"max_seq_length": max_seq, "cases": cases}, f, ensure_ascii=False)
        ref = f.name
    env = dict(os.environ, DFW_MINILM_DIR=args.model, DFW_MINILM_REFERENCE=ref, DFW_MINILM_BACKEND=args.backend)
    try:
        rc = subprocess.call([args.tests, "--gtest_filter=BertMiniLM.*"], env=env)
    finally:
        os.unlink(ref)
    sys.exit(rc)


if __name__ == "__main__":
    main()
