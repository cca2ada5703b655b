#!/usr/bin/env python3
"""How much accuracy int8 loses where the range is reduced (no VNNI), simulated in PyTorch.

Fake-quantises every Linear layer of a BERT-family sentence encoder as the CPU backend does
(weights per output channel, symmetric, to +-WTOP or pair-bounded; activations per row, asymmetric,
to 0..ATOP)
and prints each scheme's min / mean cosine of the mean-pooled embeddings to float32. Also prints
each layer's own relative error at 7 bits for weights and activations (the per-layer rule in
src/backend/cpu/dnnl_lowp.cc). docs/precision.md quotes its output.

Usage: sim_int8_range.py MODEL_DIR SENTENCES_FILE [N=512]
(the venv of scripts/bench_embed_e2e.sh has torch and transformers; never in CI)
"""
import collections
import re
import sys

import torch
from transformers import AutoModel, AutoTokenizer

torch.set_num_threads(1)
model_dir, sentences = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 512
texts = [line.rstrip("\n") for line in open(sentences, encoding="utf-8")][:n]
tok = AutoTokenizer.from_pretrained(model_dir)
model = AutoModel.from_pretrained(model_dir).eval()
linears = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and "pooler" not in name]
original = {name: m.weight.data.clone() for name, m in linears}
FFN_DOWN = r"layer\.\d+\.output\.dense"


def quant_weights(w, top):
    amax = w.abs().amax(1, keepdim=True)
    s = torch.where(amax > 0, amax / top, torch.ones_like(amax))
    return torch.clamp(torch.round(w / s), -top, top) * s


def quant_weights_pairs(w, pair_top=128):
    """8-bit weights with every same-signed pair (2i, 2i+1) bounded to pair_top steps (the backend's
    scheme without VNNI: u8 x s8 pair sums stay within int16). The rare pair that rounding carries one
    step past the bound is left as it is here: it moves the figures by less than their last digit."""
    k2 = w.shape[1] // 2 * 2
    a, b = w[:, 0:k2:2], w[:, 1:k2:2]
    same = (a * b) > 0
    pair_max = torch.where(same, a.abs() + b.abs(), torch.zeros_like(a)).amax(1, keepdim=True)
    amax = w.abs().amax(1, keepdim=True)
    s = torch.maximum(amax / 127, pair_max / pair_top)
    s = torch.where(amax > 0, s, torch.ones_like(amax))
    return torch.clamp(torch.round(w / s), -127, 127) * s


def quant_rows(x, top):
    lo = torch.clamp(x.amin(-1, keepdim=True), max=0)
    hi = torch.clamp(x.amax(-1, keepdim=True), min=0)
    s = (hi - lo) / top
    s = torch.where(s > 0, s, torch.ones_like(s))
    zp = torch.clamp(torch.round(-lo / s), 0, top)
    return (torch.clamp(torch.round(x / s) + zp, 0, top) - zp) * s


def relative(q, v):
    return ((q - v).norm() / v.norm()).item()


def embed():
    out = []
    with torch.no_grad():
        for i in range(0, len(texts), 64):
            e = tok(texts[i:i + 64], padding=True, truncation=True, max_length=128, return_tensors="pt")
            h = model(**e).last_hidden_state
            m = e["attention_mask"][..., None].float()
            p = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
            out.append(torch.nn.functional.normalize(p, dim=1))
    return torch.cat(out)


hooks = []


def scheme(label, choose):
    """choose(layer name, float32 weights) -> (weight top, activation top), or None for float32."""
    for h in hooks:
        h.remove()
    hooks.clear()
    for name, m in linears:
        tops = choose(name, original[name])
        if tops is None:
            m.weight.data = original[name].clone()
        elif tops[0] == "pairs":
            m.weight.data = quant_weights_pairs(original[name])
        else:
            m.weight.data = quant_weights(original[name], tops[0])
        if tops is not None:
            hooks.append(m.register_forward_pre_hook(lambda mod, args, a=tops[1]: (quant_rows(args[0], a),)))
    cos = (embed() * reference).sum(1)
    print("  %-44s min %.6f  mean %.6f" % (label, cos.min().item(), cos.mean().item()), flush=True)


# Per-layer errors at 7 bits (activations from the first 64 sentences).
act_err = collections.defaultdict(list)
probe = [m.register_forward_pre_hook(lambda mod, args, nm=name: act_err[nm].append(relative(quant_rows(args[0], 127), args[0])))
         for name, m in linears]
with torch.no_grad():
    model(**tok(texts[:64], padding=True, truncation=True, max_length=128, return_tensors="pt"))
for p in probe:
    p.remove()
print("relative error (weights per channel: 8 bits, pair-bounded, 7 bits; activations per row at 7 bits):")
for name, _ in linears:
    w = original[name]
    print("  %-48s weights %.4f / %.4f / %.4f  activations %.4f" % (
        name, relative(quant_weights(w, 127), w), relative(quant_weights_pairs(w), w), relative(quant_weights(w, 63), w),
        sum(act_err[name]) / len(act_err[name])))
with torch.no_grad():
    reference = embed()
print("cosine to float32 over %d sentences:" % len(texts))
scheme("8-bit weights, 8-bit activations (VNNI)", lambda n, w: (127, 255))
scheme("7-bit weights everywhere (reduce_range)", lambda n, w: (63, 255))
scheme("7-bit activations everywhere", lambda n, w: (127, 127))
scheme("7-bit weights, FFN down in float32", lambda n, w: None if re.search(FFN_DOWN, n) else (63, 255))
scheme("per layer: 7-bit weights unless their error > 0.02",
       lambda n, w: (127, 127) if relative(quant_weights(w, 63), w) > 0.02 else (63, 255))
scheme("pair-bounded weights, 8-bit activations", lambda n, w: ("pairs", 255))
