#!/usr/bin/env python3
"""Writes testdata/hf/decoders/: tiny seeded random decoder-only models for the text-generation task of
HuggingFacePipelineModelHandler, saved as transformers saves them (config.json, model.safetensors,
generation_config.json, tokenizer.json, tokenizer_config.json), one directory per architecture:

  llama             LlamaForCausalLM, grouped-query attention (4 heads / 2 KV heads), rope_theta 500000,
                    llama3 rope scaling, untied lm_head, BOS added by the tokenizer, chat template
  llama-linear-tied LlamaForCausalLM, multi-head attention, linear rope scaling, tied embeddings; its
                    config.json is rewritten in the older layout that most hub checkpoints still carry
                    (top-level rope_theta + rope_scaling {type: linear}) instead of 5.x's rope_parameters
  qwen2             Qwen2ForCausalLM (q/k/v bias), no BOS, ChatML chat template, two EOS ids
  mistral           MistralForCausalLM, sliding_window 8, one KV head
  gemma             GemmaForCausalLM: sqrt(hidden)-scaled embeddings, (1+w) RMSNorm, GeGLU, head_dim 16
                    != hidden/heads; generation_config.json sets do_sample false and max_new_tokens 10
  gemma2            Gemma2ForCausalLM: attention and final logit soft-capping (small caps, so they bite),
                    query_pre_attn_scalar, pre/post feed-forward norms, sliding window on layer 0
  gpt2              GPT2LMHeadModel: learned positions, Conv1D weights, gelu_new, no BOS added
  llama-bf16        the llama weights cast to bfloat16 (config dtype bfloat16)
  qwen2-f16         the qwen2 weights cast to float16

All share one byte-level BPE vocabulary (300 tokens, trained with `tokenizers` on CORPUS below, which
holds accents, CJK and emoji, so greedy generation often stops inside a UTF-8 character) with
<|bos|> <|eos|> <|pad|> <|im_start|> <|im_end|> as ids 0-4.

Weights are drawn wide (std 0.3, norms 1 +- 0.1) so logits are far from uniform, and the EOS rows of
the output projection are scaled up so that greedy decoding does reach EOS on some prompts. A model's
seed is accepted only when every greedy step of every case in scripts/hf_generation_references.py has a
top-1/top-2 logit margin above MIN_MARGIN (so float rounding cannot flip a token) and one of its EOS
probes stops on EOS; otherwise the next seed is tried. The chosen seeds are printed.

Needs: torch, transformers (5.x), tokenizers, safetensors (scripts/check_text_generation.sh installs them).
Usage: python3 scripts/make_tiny_decoder_models.py [OUT_DIR]   (default testdata/hf/decoders)
Then:  python3 scripts/hf_generation_references.py [OUT_DIR]   (rewrites testdata/hf/references/text_generation_*.json)
"""
import json
import os
import shutil
import sys

import torch
from tokenizers import ByteLevelBPETokenizer, processors
from transformers import (GemmaConfig, GemmaForCausalLM, Gemma2Config, Gemma2ForCausalLM, GenerationConfig,
                          GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, MistralConfig,
                          MistralForCausalLM, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_generation_references as refs  # noqa: E402  (the cases that the seeds must satisfy)

SEED = 20261210
MAX_SEED_TRIES = 40
MIN_MARGIN = 2e-3
SPECIALS = ["<|bos|>", "<|eos|>", "<|pad|>", "<|im_start|>", "<|im_end|>"]
BOS, EOS, PAD, IM_START, IM_END = range(5)
CORPUS = [
    "The capital of France is Paris. The capital of Japan is Tokyo.",
    "Once upon a time there was a little robot who loved to sing.",
    "Hello world! The quick brown fox jumps over the lazy dog.",
    "I love this movie, it is wonderful and great.",
    "Crème brûlée, naïve café — résumé. Àççéñts everywhere.",
    "我爱北京天安门。東京は日本の首都です。你好，世界！",
    "Emoji test 😀🎉👍🚀 and more 🌍✨",
    "def add(a, b):\n    return a + b\n",
    "user: What is the weather like today?\nassistant: It is sunny and warm.",
    "Numbers 3.14159 and 1,000,000 and 42.",
]

# ChatML with a BOS on the first turn, an optional system message, strict user/assistant alternation
# and EOS after each assistant turn, in the style of Llama-2/Mistral templates.
LLAMA_CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{%- set system_message = messages[0]['content'] %}{%- set loop_messages = messages[1:] %}"
    "{%- else %}{%- set system_message = none %}{%- set loop_messages = messages %}{%- endif %}"
    "{%- for message in loop_messages %}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{- raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{%- endif %}"
    "{%- if loop.first %}{{- bos_token }}"
    "{%- if system_message is not none %}{{- '<|im_start|>system\\n' + system_message | trim + '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' + message['content'] | trim + '<|im_end|>' + eos_token + '\\n' }}"
    "{%- else %}{{- '<|im_start|>user\\n' + message['content'] | trim + '<|im_end|>\\n' }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# Qwen2-style ChatML: a default system message, any of system/user/assistant, no BOS.
QWEN2_CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if loop.first and message['role'] != 'system' %}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{%- endif %}"
    "{%- if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{- raise_exception('Unknown role: ' + message['role']) }}{%- endif %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def tokenizer(add_bos, chat_template=None, gpt2_style=False):
    bpe = ByteLevelBPETokenizer(add_prefix_space=False)
    bpe.train_from_iterator(CORPUS, vocab_size=300, min_frequency=2, special_tokens=SPECIALS)
    tok = bpe._tokenizer
    if add_bos:  # as Llama-3's tokenizer.json declares it
        tok.post_processor = processors.TemplateProcessing(
            single="<|bos|> $A", pair="<|bos|> $A <|bos|>:1 $B:1", special_tokens=[("<|bos|>", BOS)])
    else:  # as GPT-2's and Qwen2's: byte-level offsets only
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    if gpt2_style:  # GPT-2 uses one token for BOS, EOS and UNK, and has no padding token
        t = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|eos|>", eos_token="<|eos|>",
                                    unk_token="<|eos|>", clean_up_tokenization_spaces=False)
    else:
        t = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|bos|>", eos_token="<|eos|>",
                                    pad_token="<|pad|>", clean_up_tokenization_spaces=False,
                                    additional_special_tokens=["<|im_start|>", "<|im_end|>"])
    t.model_max_length = 128
    if chat_template:
        t.chat_template = chat_template
    return t


def widen(model, seed, one_plus_norm=False):
    """Re-draws every parameter with a wide spread, so greedy choices are clear-cut."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "norm" in name or name.split(".")[-2].startswith("ln_"):
                if name.endswith("bias"):
                    p.copy_(0.1 * torch.randn(p.shape, generator=g))
                else:  # Gemma's RMSNorm multiplies by (1 + w)
                    p.copy_((0.0 if one_plus_norm else 1.0) + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
        out = model.get_output_embeddings().weight
        out[[EOS, IM_END]] *= 1.3
    return model.eval()


def llama_config(v, **kw):
    base = dict(vocab_size=v, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=8, max_position_embeddings=128, rms_norm_eps=1e-5,
                bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, tie_word_embeddings=False,
                rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                 "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 16})
    base.update(kw)
    return LlamaConfig(**base)


def specs(v):
    """name -> (build(seed) -> model, tokenizer, generation_config fields, variants {name: dtype})."""
    llama_tok = tokenizer(add_bos=True, chat_template=LLAMA_CHAT_TEMPLATE)
    plain_tok = tokenizer(add_bos=True)
    qwen_tok = tokenizer(add_bos=False, chat_template=QWEN2_CHAT_TEMPLATE)
    gpt2_tok = tokenizer(add_bos=False, gpt2_style=True)
    common = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, max_position_embeddings=128,
                  bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD)
    return {
        "llama": (lambda s: widen(LlamaForCausalLM(llama_config(v)), s), llama_tok,
                  dict(bos_token_id=BOS, eos_token_id=EOS), {"llama-bf16": torch.bfloat16}),
        "llama-linear-tied": (lambda s: widen(LlamaForCausalLM(llama_config(
            v, num_key_value_heads=4, tie_word_embeddings=True,
            rope_parameters={"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0})), s),
            plain_tok, dict(bos_token_id=BOS, eos_token_id=EOS), {}),
        "qwen2": (lambda s: widen(Qwen2ForCausalLM(Qwen2Config(
            vocab_size=v, num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, tie_word_embeddings=False,
            **common)), s), qwen_tok,
            dict(bos_token_id=BOS, eos_token_id=[EOS, IM_END], pad_token_id=PAD), {"qwen2-f16": torch.float16}),
        "mistral": (lambda s: widen(MistralForCausalLM(MistralConfig(
            vocab_size=v, num_attention_heads=4, num_key_value_heads=1, head_dim=8, sliding_window=8,
            rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            tie_word_embeddings=False, **common)), s), plain_tok, dict(bos_token_id=BOS, eos_token_id=EOS), {}),
        "gemma": (lambda s: widen(GemmaForCausalLM(GemmaConfig(
            vocab_size=v, num_attention_heads=4, num_key_value_heads=1, head_dim=16,
            hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, **common)), s, one_plus_norm=True),
            plain_tok, dict(bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD, do_sample=False,
                            max_new_tokens=10), {}),
        "gemma2": (lambda s: widen(Gemma2ForCausalLM(Gemma2Config(
            vocab_size=v, num_attention_heads=4, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=24,
            attn_logit_softcapping=4.0, final_logit_softcapping=6.0, sliding_window=8,
            layer_types=["sliding_attention", "full_attention"], hidden_activation="gelu_pytorch_tanh",
            rms_norm_eps=1e-6, **common)), s, one_plus_norm=True),
            plain_tok, dict(bos_token_id=BOS, eos_token_id=EOS, pad_token_id=PAD), {}),
        "gpt2": (lambda s: widen(GPT2LMHeadModel(GPT2Config(
            vocab_size=v, n_positions=64, n_embd=32, n_layer=2, n_head=4, activation_function="gelu_new",
            bos_token_id=EOS, eos_token_id=EOS)), s), gpt2_tok, dict(bos_token_id=EOS, eos_token_id=EOS), {}),
    }


def legacy_rope(d):
    """Rewrites config.json's rope_parameters as top-level rope_theta + rope_scaling, as older hub files are."""
    path = os.path.join(d, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    rope = cfg.pop("rope_parameters")
    cfg["rope_theta"] = rope.pop("rope_theta")
    cfg["rope_scaling"] = {"type": rope.pop("rope_type"), **rope}
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def save(model, tok, gen, d, dtype=None):
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    if dtype is not None:
        model = model.to(dtype)
        model.config.dtype = dtype
    model.generation_config = GenerationConfig(**gen)
    model.save_pretrained(d, safe_serialization=True)
    tok.save_pretrained(d, save_jinja_files=False)
    for f in os.listdir(d):  # only what the handler reads
        if f not in ("config.json", "model.safetensors", "generation_config.json", "tokenizer.json",
                     "tokenizer_config.json"):
            os.remove(os.path.join(d, f))


def main():
    torch.set_num_threads(1)
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/hf/decoders"
    os.makedirs(out, exist_ok=True)
    vocab = len(tokenizer(add_bos=False))
    models = specs(vocab)
    for name, (build, tok, gen, variants) in models.items():
        for attempt in range(MAX_SEED_TRIES):
            seed = SEED + 1000 * list(models).index(name) + attempt
            model = build(seed)
            save(model, tok, gen, os.path.join(out, name))
            if name == "llama-linear-tied":
                legacy_rope(os.path.join(out, name))
            for vname, dtype in variants.items():
                save(build(seed), tok, gen, os.path.join(out, vname), dtype)
            problems = []
            for m in [name] + list(variants):
                problems += refs.check_model(out, m, MIN_MARGIN)
            if not problems:
                print(f"wrote {name} (seed {seed})" + "".join(f", {v}" for v in variants))
                break
            print(f"  {name} seed {seed} rejected: {problems[0]}")
        else:
            sys.exit(f"no seed in {MAX_SEED_TRIES} tries gives {name} clear greedy margins")


if __name__ == "__main__":
    main()
