#!/usr/bin/env python3
"""Writes the demo inputs under pipelines/data/ (deterministic; rerun to regenerate them).

- breast_cancer_demo.jsonl: the 143 held-out rows of pipelines/models/breast_cancer_mlp/sample.jsonl
  repeated 40 times with ids "test-000-r00" ... (5,720 rows, about 1.7 MB: enough for every SDK
  process of a g2-standard-8 to get bundles), then the sample's 4 planted bad rows once.
- orders/part-0000{0,1}.jsonl: orders for pipelines/json_clean.yaml, with a few bad records.
- reviews.csv: reviews for pipelines/csv_explode.yaml (a comment line, a quoted newline).
"""
import json
import os
import random

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DATA = os.path.join(ROOT, "pipelines", "data")


def demo():
    src = os.path.join(ROOT, "pipelines", "models", "breast_cancer_mlp", "sample.jsonl")
    with open(src) as f:
        lines = [l for l in f.read().splitlines() if l]
    good, bad = lines[:143], lines[143:]
    with open(os.path.join(DATA, "breast_cancer_demo.jsonl"), "w") as out:
        for r in range(40):
            for line in good:
                row = json.loads(line)
                row["id"] = f"{row['id']}-r{r:02d}"
                out.write(json.dumps(row) + "\n")
        for line in bad:
            out.write(line + "\n")


def orders():
    rng = random.Random(7)
    notes = ["  Gift WRAP please ", "Leave at the door", "", None, "fragile  item", "Call before delivery"]
    os.makedirs(os.path.join(DATA, "orders"), exist_ok=True)
    n = 0
    for part in range(2):
        with open(os.path.join(DATA, "orders", f"part-{part:05d}.jsonl"), "w") as out:
            for _ in range(250):
                row = {"order_id": n, "price": round(rng.uniform(-5, 120), 2), "qty": rng.randint(0, 5),
                       "raw_note": rng.choice(notes)}
                out.write(json.dumps(row) + "\n")
                n += 1
            out.write('{"order_id": "broken", "price": \n')  # unparseable: goes to the error output
            out.write(json.dumps({"order_id": n, "price": None, "qty": 2, "raw_note": "price is missing"}) + "\n")
            n += 1


def reviews():
    rng = random.Random(11)
    words = ["great", "fast", "shipping", "broken", "love", "it", "would", "buy", "again", "meh"]
    with open(os.path.join(DATA, "reviews.csv"), "w") as out:
        out.write("# product reviews for pipelines/csv_explode.yaml\n")
        out.write("id,text\n")
        for i in range(300):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
            if i % 50 == 7:
                text = f'"{text}\nsecond line"'
            out.write(f"{i},{text}\n")


if __name__ == "__main__":
    os.makedirs(DATA, exist_ok=True)
    demo()
    orders()
    reviews()
