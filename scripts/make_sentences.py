#!/usr/bin/env python3
"""The benchmark sentences: N lines of 4 to 110 words (accents, CJK, emoji, punctuation), the same
for a given N every time (seed 7), so dfworker and its peers read the same input.

Usage: make_sentences.py OUT N [--jsonl]   (--jsonl: {"id": i, "text": ...} rows, else one sentence a line)
"""
import json
import random
import sys

WORDS = ("search retrieval embedding vector model sentence query document ranking semantic similarity "
         "neural network training inference batch latency throughput memory pipeline worker résumé café "
         "naïve 日本 中文 😀 — don't 3.5 100%").split()


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, n, jsonl = sys.argv[1], int(sys.argv[2]), "--jsonl" in sys.argv[3:]
    rng = random.Random(7)
    with open(out, "w", encoding="utf-8") as f:
        for i in range(n):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 110)))
            f.write((json.dumps({"id": i, "text": text}, ensure_ascii=False) if jsonl else text) + "\n")


if __name__ == "__main__":
    main()
