#!/usr/bin/env python3
"""Writes a Llama-shaped decoder with random weights for the generation benchmark
(scripts/bench_generation.sh): big enough that its weights do not fit any cache, so decode speed is
bound by memory bandwidth as it is for real models. Saved as transformers saves it (config.json,
model.safetensors in float32, generation_config.json); the tokenizer is the tiny test model's
(the benchmark feeds token ids, not text).

Default shape (about 170 M parameters, 0.68 GB in float32): hidden 1024, 8 layers, 16 heads,
4 KV heads (head_dim 64), intermediate 2816, vocab 32000, untied.

Usage: python3 scripts/make_bench_decoder.py OUT_DIR [--layers N] [--hidden H]
Needs torch and transformers (scripts/check_text_generation.sh's venv).
"""
import argparse
import os
import shutil

import torch
from transformers import LlamaConfig, LlamaForCausalLM

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--layers", type=int, default=8)
p.add_argument("--hidden", type=int, default=1024)
p.add_argument("--intermediate", type=int, default=2816)
p.add_argument("--vocab", type=int, default=32000)
a = p.parse_args()
torch.manual_seed(20261202)
cfg = LlamaConfig(hidden_size=a.hidden, intermediate_size=a.intermediate, num_hidden_layers=a.layers,
                  num_attention_heads=a.hidden // 64, num_key_value_heads=max(1, a.hidden // 256),
                  vocab_size=a.vocab, max_position_embeddings=4096, tie_word_embeddings=False,
                  bos_token_id=0, eos_token_id=1)
model = LlamaForCausalLM(cfg).to(torch.float32)
model.save_pretrained(a.out, safe_serialization=True)
tiny = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "hf", "decoders", "llama")
for f in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(os.path.join(tiny, f), os.path.join(a.out, f))
n = sum(t.numel() for t in model.parameters())
print(f"wrote {a.out}: {n / 1e6:.1f} M parameters")
