#!/usr/bin/env python3
"""Writes a BERT model directory with all-MiniLM-L6-v2's shapes and made-up weights.

For throughput checks where the real weights cannot be fetched (a GPU machine with no network):
config.json (6 layers, hidden 384, 12 heads, intermediate 1536, vocab 30522, 512 positions),
model.safetensors (F32, Hugging Face BertModel tensor names, small deterministic values, about
90 MB), vocab.txt (the special tokens, then the tiny test vocabulary, then filler tokens) and
tokenizer_config.json. The embeddings it produces mean nothing; the work per sentence is MiniLM's.
Python standard library only.

Usage: scripts/make_bert_shaped.py OUT_DIR [TINY_VOCAB=testdata/tiny_bert/vocab.txt]
"""
import array
import json
import os
import struct
import sys

LAYERS, HIDDEN, HEADS, INTER, VOCAB, POSITIONS = 6, 384, 12, 1536, 30522, 512


def tensors():
    yield "embeddings.word_embeddings.weight", [VOCAB, HIDDEN]
    yield "embeddings.position_embeddings.weight", [POSITIONS, HIDDEN]
    yield "embeddings.token_type_embeddings.weight", [2, HIDDEN]
    yield "embeddings.LayerNorm.weight", [HIDDEN]
    yield "embeddings.LayerNorm.bias", [HIDDEN]
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            yield p + f"attention.self.{name}.weight", [HIDDEN, HIDDEN]
            yield p + f"attention.self.{name}.bias", [HIDDEN]
        yield p + "attention.output.dense.weight", [HIDDEN, HIDDEN]
        yield p + "attention.output.dense.bias", [HIDDEN]
        yield p + "attention.output.LayerNorm.weight", [HIDDEN]
        yield p + "attention.output.LayerNorm.bias", [HIDDEN]
        yield p + "intermediate.dense.weight", [INTER, HIDDEN]
        yield p + "intermediate.dense.bias", [INTER]
        yield p + "output.dense.weight", [HIDDEN, INTER]
        yield p + "output.dense.bias", [HIDDEN]
        yield p + "output.LayerNorm.weight", [HIDDEN]
        yield p + "output.LayerNorm.bias", [HIDDEN]


def values(name, count):
    """Deterministic small values: LayerNorm weights 1, biases 0, others a repeating ramp in ±0.02."""
    if name.endswith("LayerNorm.weight"):
        return array.array("f", [1.0]) * count
    if name.endswith(".bias"):
        return array.array("f", [0.0]) * count
    period = 97  # prime, so rows differ
    ramp = array.array("f", [((k * 37) % period - period // 2) * 0.02 / period for k in range(period)])
    out = ramp * (count // period + 1)
    del out[count:]
    return out


def main():
    out_dir = sys.argv[1]
    tiny_vocab = sys.argv[2] if len(sys.argv) > 2 else "testdata/tiny_bert/vocab.txt"
    os.makedirs(out_dir, exist_ok=True)
    header, offset, names = {}, 0, list(tensors())
    for name, shape in names:
        n = 1
        for d in shape:
            n *= d
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + 4 * n]}
        offset += 4 * n
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(os.path.join(out_dir, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for name, shape in names:
            n = 1
            for d in shape:
                n *= d
            a = values(name, n)
            if sys.byteorder != "little":
                a.byteswap()
            a.tofile(f)
    config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_act": "gelu", "hidden_size": HIDDEN,
              "intermediate_size": INTER, "num_attention_heads": HEADS, "num_hidden_layers": LAYERS,
              "max_position_embeddings": POSITIONS, "type_vocab_size": 2, "vocab_size": VOCAB,
              "layer_norm_eps": 1e-12, "pad_token_id": 0}
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(tiny_vocab, encoding="utf-8") as f:
        words = [w.rstrip("\n") for w in f]
    seen = set(words)
    vocab = list(words)
    k = 0
    while len(vocab) < VOCAB:
        token = f"[unused{k}]"
        k += 1
        if token not in seen:
            vocab.append(token)
    with open(os.path.join(out_dir, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab[:VOCAB]) + "\n")
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "model_max_length": 512}, f)
    print(out_dir)


if __name__ == "__main__":
    main()
