#!/usr/bin/env bash
# Text generation on the CPU, dfworker's engine against transformers (torch CPU) on the same
# Llama-shaped model (scripts/make_bench_decoder.py: 156 M parameters, float32, 0.62 GB), and both
# against the memory-bandwidth bound of decoding (weight bytes per step ÷ measured read bandwidth).
# Rounds alternate dfworker / transformers; every figure is printed with the CPU flags it ran on.
#
# Usage: scripts/bench_generation.sh [BUILD_DIR=build] [ROUNDS=3] [THREADS=2] [NEW_TOKENS=32]
# Needs: the venv of scripts/check_text_generation.sh ($DFW_HF_VENV, default ~/.cache/dfworker/hf-venv)
# for the model and the transformers side; never run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
threads=${3:-2}
new=${4:-32}
venv=${DFW_HF_VENV:-$HOME/.cache/dfworker/hf-venv}
model=${DFW_BENCH_DECODER:-$HOME/.cache/dfworker/bench-llama}
bench=$build/bench/inference_generation_bench
[[ -x $bench ]] || { echo "bench_generation: $bench not built (cmake --build $build --target inference_generation_bench)" >&2; exit 2; }
[[ -s $model/model.safetensors ]] || OMP_NUM_THREADS=1 "$venv/bin/python" scripts/make_bench_decoder.py "$model" >/dev/null
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs) | flags: $(grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16|amx_bf16|amx_int8' /proc/cpuinfo | sort -u | xargs) | $(nproc) cores | load $(cut -d' ' -f1 /proc/loadavg)"
out=$(mktemp -d /tmp/dfw-bench-generation-XXXXXX)
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < rounds; ++r)); do
  DFW_DECODER_DIR=$model "$bench" --rounds 1 --threads "$threads" --new_tokens "$new" --batches 1,16 >>"$out/dfworker.jsonl"
  OMP_NUM_THREADS=$threads "$venv/bin/python" - "$model" "$threads" "$new" >>"$out/transformers.jsonl" 2>/dev/null <<'PY'
import json, sys, time
import torch
from transformers import AutoModelForCausalLM
model_dir, threads, new = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
m = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
v = m.config.vocab_size
with torch.no_grad():  # warm-up, as the C++ side does
    m.generate(torch.tensor([[1, 2, 3, 4]]), max_new_tokens=2, do_sample=False, pad_token_id=0)
for b in (1, 16):
    ids = torch.tensor([[(s * 7919 + t * 104729) % v for t in range(32)] for s in range(b)])
    with torch.no_grad():
        t0 = time.perf_counter(); m(ids); prefill = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = m.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, min_new_tokens=new,
                         do_sample=False, pad_token_id=0)
        total = time.perf_counter() - t0
    gen = (out.shape[1] - ids.shape[1]) * b
    print(json.dumps({"what": "decode", "engine": "transformers", "batch": b,
                      "tokens_per_s": (gen - b) / max(total - prefill, 1e-9), "prefill_tokens_per_s": ids.numel() / prefill}))
PY
done
python3 - "$out" <<'PY'
import json, statistics, sys
d = sys.argv[1]
ours = [json.loads(l) for l in open(f"{d}/dfworker.jsonl")]
theirs = [json.loads(l) for l in open(f"{d}/transformers.jsonl")]
setup = next(x for x in ours if x["what"] == "setup")
bw = [x for x in ours if x["what"] == "bandwidth"]
limit = statistics.median(x["decode_limit_tokens_per_s"] for x in bw)
print(f"model: {setup['parameters']/1e6:.1f} M parameters, {setup['weight_bytes_per_step']/1e9:.3f} GB of weights read per decode step ({setup['dtype']}), {setup['threads']} threads")
print(f"read bandwidth (median of {len(bw)}): {statistics.median(x['bytes_per_s'] for x in bw)/1e9:.2f} GB/s -> decode bound {limit:.2f} tokens/s at batch 1")
print(f"{'':24}{'decode tok/s b=1':>18}{'decode tok/s b=16':>19}{'b16/b1':>8}{'prefill tok/s b=1':>19}{'b1 / bound':>12}")
for name, rows in (("dfworker", [x for x in ours if x["what"] == "decode"]), ("transformers (torch)", theirs)):
    def med(b, key): return statistics.median(x[key] for x in rows if x["batch"] == b)
    b1, b16 = med(1, "tokens_per_s"), med(16, "tokens_per_s")
    print(f"{name:24}{b1:18.2f}{b16:19.2f}{b16/b1:8.2f}{med(1, 'prefill_tokens_per_s'):19.1f}{b1/limit:12.2f}")
PY
