#!/usr/bin/env python3
"""Builds testdata/tiny_bert/: a tiny random BertModel and its reference outputs.

The model (hidden 32, 2 layers, 4 heads, ~1k-token vocab) is generated from a fixed seed with the
real `transformers` BertModel; tokens come from the tokenizer AutoTokenizer loads from the directory (the one
sentence-transformers uses; transformers 5 has no other);
embeddings are the model's last hidden state pooled as sentence-transformers does (masked mean,
and [CLS]), each sentence run on its own (no padding), so the C++ encoder's padded batches are
checked against unpadded references.

Needs: pip install torch transformers safetensors  (CPU is enough).
Usage: python3 scripts/make_tiny_bert.py [OUT_DIR]   (default testdata/tiny_bert)
"""
import json
import os
import sys

import torch
from tokenizers.normalizers import BertNormalizer
from tokenizers.pre_tokenizers import BertPreTokenizer
from transformers import AutoTokenizer, BertConfig, BertModel

SEED = 20261130
MAX_SEQ_LENGTH = 64  # the tests encode with this; the long sentences below exceed it

SENTENCES = [
    "Hello world!",
    "The quick brown fox jumps over the lazy dog.",
    "Crème brûlée, naïve café — résumé.",
    "我爱北京天安门",
    "東京は日本の首都です。",
    "Emoji test 😀🎉👍",
    "",
    "   \t  ",
    "UPPER lower MiXeD",
    "Punctuation!!! ??? ... ,,, ;;; :::",
    "email@example.com http://x.y/z?q=1&r=2",
    "Numbers 3.14159 and 1,000,000 and 42",
    "Tabs\tand\nnewlines\r\nmixed",
    "Ünïcödé Àççéñts everywhere",
    "Straße in München",
    "Ελληνικά κείμενα ΟΔΟΣ",
    "Русский текст",
    "한국어 문장",
    "unaffable unwanted running jumped",
    " ".join(["lorem ipsum dolor sit amet, consectetur adipiscing elit"] * 12),
    "a",
    "$100 + 50% = ^_^ ~`|\\",
    "¿Dónde está la biblioteca?",
    "zero\u200bwidth and soft\u00adhyphen",
    "non\u00a0breaking space",
    "Mixed 中文 and English words",
    "I can't won't shouldn't",
    "«Quotes» “curly” ‘single’",
    "x" * 150,
    "The cat sat on the mat. The dog sat on the log.",
    "❤️ love",
    "İstanbul",
    "control\x01chars\x7fhere",
]


def build_vocab():
    normalizer, pre = BertNormalizer(lowercase=True), BertPreTokenizer()
    words = []
    for s in SENTENCES:
        for w, _ in pre.pre_tokenize_str(normalizer.normalize_str(s)):
            if w not in words:
                words.append(w)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

    def add(tok):
        if tok not in vocab:
            vocab.append(tok)

    for c in "abcdefghijklmnopqrstuvwxyz0123456789":
        add(c)
        add("##" + c)
    for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~":
        add(c)
    # Every other word whole, the rest as prefix + continuation, so both WordPiece paths are used;
    # single non-ASCII characters for some scripts only, so others stay [UNK].
    for i, w in enumerate(words):
        if len(w) == 1:
            if ord(w) < 0x3000 or i % 3 != 0:
                add(w)
        elif i % 2 == 0:
            add(w)
        elif len(w) >= 4 and w.isascii():
            add(w[: len(w) // 2])
            add("##" + w[len(w) // 2:])
    for c in "тексрусийаλην":
        add(c)
        add("##" + c)
    letters = "etaoinshrdlu"
    for a in letters:
        for b in letters:
            add("##" + a + b)
    i = 0
    while len(vocab) < 1000:
        add("filler%d" % i)
        i += 1
    return vocab


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "testdata", "tiny_bert")
    os.makedirs(out, exist_ok=True)
    vocab = build_vocab()
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "model_max_length": 128, "tokenizer_class": "BertTokenizer"}, f, indent=2)

    torch.manual_seed(SEED)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=128, type_vocab_size=2, hidden_act="gelu",
                        layer_norm_eps=1e-12, attn_implementation="eager")
    model = BertModel(config, add_pooling_layer=False).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():  # non-trivial biases and LayerNorm affine parameters
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn_like(p))
            else:
                p.copy_(0.08 * torch.randn_like(p))
    model.save_pretrained(out, safe_serialization=True)

    fast = AutoTokenizer.from_pretrained(out)  # as sentence-transformers loads a model directory
    cases = []
    for text in SENTENCES:
        enc = fast(text, truncation=True, max_length=MAX_SEQ_LENGTH)
        ids = enc["input_ids"]
        with torch.no_grad():
            hidden = model(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                           token_type_ids=torch.zeros(1, len(ids), dtype=torch.long)).last_hidden_state[0]
        mean = hidden.mean(dim=0)
        cases.append({
            "text": text,
            "tokens": fast.convert_ids_to_tokens(ids),
            "ids": ids,
            "mean": [round(float(v), 7) for v in mean],
            "mean_normalized": [round(float(v), 7) for v in torch.nn.functional.normalize(mean, dim=0)],
            "cls": [round(float(v), 7) for v in hidden[0]],
        })
    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump({"max_seq_length": MAX_SEQ_LENGTH, "generator": "scripts/make_tiny_bert.py",
                   "torch": torch.__version__, "transformers": __import__("transformers").__version__,
                   "cases": cases}, f, ensure_ascii=False, indent=1)
    print("wrote %s: %d tokens, %d sentences" % (out, len(vocab), len(cases)))


if __name__ == "__main__":
    main()
