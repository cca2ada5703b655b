#!/usr/bin/env python3
"""Writes testdata/hf/: tiny seeded random Hugging Face models, saved as transformers saves them
(config.json, model.safetensors, tokenizer.json, tokenizer_config.json), one directory per
architecture x head (feature-extraction runs the bare encoder of the masked-LM ones), for HuggingFacePipelineModelHandler's tests.

Each model has hidden size 16, 2 layers and a vocabulary of a few hundred tokens trained (with
`tokenizers`) on the sentences below, so a model directory is ~40 KB. Weights are drawn from a
fixed seed with a wide spread (std 0.3) so the pipelines' scores differ clearly (ties would make
the top-k order meaningless). scripts/check_hf_pipelines.sh then writes the reference outputs.

Needs: torch, transformers, tokenizers, safetensors (scripts/check_hf_pipelines.sh installs them).
Usage: python3 scripts/make_tiny_hf_models.py [OUT_DIR]   (default testdata/hf)
"""
import json
import os
import sys

import torch
from tokenizers import AddedToken, ByteLevelBPETokenizer, BertWordPieceTokenizer
from transformers import (BertConfig, BertForMaskedLM, BertForSequenceClassification, BertForTokenClassification,
                          BertTokenizerFast, DistilBertConfig, DistilBertForMaskedLM,
                          DistilBertForSequenceClassification, DistilBertForTokenClassification, RobertaConfig,
                          RobertaForMaskedLM, RobertaForSequenceClassification, RobertaForTokenClassification,
                          ModernBertConfig, ModernBertForMaskedLM, ModernBertForSequenceClassification,
                          ModernBertForTokenClassification,
                          RobertaTokenizerFast, PreTrainedTokenizerFast, XLMRobertaConfig, XLMRobertaForMaskedLM,
                          XLMRobertaForSequenceClassification, XLMRobertaForTokenClassification)

SEED = 20261202
CORPUS = [
    "Hello world! The quick brown fox jumps over the lazy dog.",
    "I love this movie, it is wonderful and great.",
    "This film was terrible and boring; I hated it.",
    "Barack Obama was born in Hawaii and lived in Chicago.",
    "Angela Merkel visited Paris with Emmanuel Macron on Monday.",
    "Apple Inc. is based in Cupertino, California.",
    "The capital of France is Paris. The capital of Japan is Tokyo.",
    "Crème brûlée, naïve café — résumé. Ünïcödé Àççéñts everywhere",
    "我爱北京天安门 東京は日本の首都です。",
    "Emoji test 😀🎉👍 مرحبا بالعالم שלום עולם",
    "Numbers 3.14159 and 1,000,000 and 42; email@example.com http://x.y/z?q=1",
    "This example is about sports, politics, cooking or technology.",
    "The team won the football match last night.",
    "The new phone has a faster chip and a better camera.",
]
TOKEN_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]


def wordpiece_tokenizer(out):
    tok = BertWordPieceTokenizer(lowercase=True)
    tok.train_from_iterator(CORPUS, vocab_size=200, min_frequency=1, limit_alphabet=120)
    path = os.path.join(out, "_wordpiece.json")
    tok.save(path)
    t = BertTokenizerFast(tokenizer_file=path, do_lower_case=True)
    os.remove(path)
    return t


def bpe_tokenizer():
    tok = ByteLevelBPETokenizer(add_prefix_space=False)
    tok.train_from_iterator(CORPUS, vocab_size=330, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    # As roberta-base declares it: <mask> takes the space before it.
    return RobertaTokenizerFast(vocab=model["vocab"], merges=merges,
                                mask_token=AddedToken("<mask>", lstrip=True, rstrip=False))


def unigram_tokenizer():
    """XLM-R's layout: the SentencePiece Unigram tokenizer.json of testdata/hf/tokenizers (trained by
    scripts/hf_tokenizer_references.py, a real precompiled charsmap, <s> <pad> </s> <unk> first and
    <mask> last), with XLM-R's special tokens."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "hf", "tokenizers", "unigram-xlmr.json")
    return PreTrainedTokenizerFast(tokenizer_file=path, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                   sep_token="</s>", cls_token="<s>", pad_token="<pad>",
                                   mask_token=AddedToken("<mask>", lstrip=True, rstrip=False))


def widen(model):
    """Re-draws every parameter with a wide spread, so outputs are far from uniform."""
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "LayerNorm" in name or "norm" in name:  # every norm: LayerNorm, layer_norm, ModernBERT's *norm
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g) if name.endswith("weight")
                        else 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return model


def save(model, tok, out, name):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    widen(model).eval()
    model.save_pretrained(d, safe_serialization=True)
    tok.save_pretrained(d)
    for f in os.listdir(d):  # only what the handler reads
        if f not in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                     "special_tokens_map.json"):
            os.remove(os.path.join(d, f))
    print("wrote", d)


def labels(names):
    return {"id2label": dict(enumerate(names)), "label2id": {n: i for i, n in enumerate(names)}}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "testdata/hf"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(SEED)
    wp = wordpiece_tokenizer(out)
    bpe = bpe_tokenizer()
    small = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
                 max_position_embeddings=64)
    bert = dict(small, vocab_size=len(wp), type_vocab_size=2)
    sentiment = labels(["NEGATIVE", "POSITIVE"])
    nli = labels(["contradiction", "neutral", "entailment"])
    ner = labels(TOKEN_LABELS)
    save(BertForSequenceClassification(BertConfig(**bert, **sentiment)), wp, out, "bert-sequence-classification")
    save(BertForSequenceClassification(BertConfig(**bert, **nli)), wp, out, "bert-nli")
    save(BertForTokenClassification(BertConfig(**bert, **ner)), wp, out, "bert-token-classification")
    save(BertForMaskedLM(BertConfig(**bert)), wp, out, "bert-masked-lm")
    distil = dict(vocab_size=len(wp), dim=16, n_layers=2, n_heads=2, hidden_dim=24, max_position_embeddings=64)
    save(DistilBertForSequenceClassification(DistilBertConfig(**distil, **sentiment)), wp, out,
         "distilbert-sequence-classification")
    save(DistilBertForTokenClassification(DistilBertConfig(**distil, **ner)), wp, out, "distilbert-token-classification")
    save(DistilBertForMaskedLM(DistilBertConfig(**distil)), wp, out, "distilbert-masked-lm")
    roberta = dict(small, vocab_size=len(bpe), type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                   max_position_embeddings=66)
    save(RobertaForSequenceClassification(RobertaConfig(**roberta, **sentiment)), bpe, out,
         "roberta-sequence-classification")
    save(RobertaForSequenceClassification(RobertaConfig(**roberta, **nli)), bpe, out, "roberta-nli")
    save(RobertaForTokenClassification(RobertaConfig(**roberta, **ner)), bpe, out, "roberta-token-classification")
    save(RobertaForMaskedLM(RobertaConfig(**roberta)), bpe, out, "roberta-masked-lm")
    uni = unigram_tokenizer()
    # A 197-piece Unigram vocabulary cuts text finely: 128 positions (+ the 2 RoBERTa skips).
    xlmr = dict(small, vocab_size=len(uni), type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                max_position_embeddings=130)
    save(XLMRobertaForSequenceClassification(XLMRobertaConfig(**xlmr, **sentiment)), uni, out,
         "xlmr-sequence-classification")
    save(XLMRobertaForSequenceClassification(XLMRobertaConfig(**xlmr, **nli)), uni, out, "xlmr-nli")
    save(XLMRobertaForTokenClassification(XLMRobertaConfig(**xlmr, **ner)), uni, out, "xlmr-token-classification")
    save(XLMRobertaForMaskedLM(XLMRobertaConfig(**xlmr)), uni, out, "xlmr-masked-lm")
    # ModernBERT on the WordPiece vocabulary: 3 layers (layer 0 global, 1 and 2 local), a window of
    # 4 (each token sees 2 either side), so the sliding masks and both RoPE thetas matter on these
    # sentences; mean pooling on one classifier, [CLS] on the other; biases on the NER model.
    modern = dict(vocab_size=len(wp), hidden_size=16, num_hidden_layers=3, num_attention_heads=2, intermediate_size=24,
                  max_position_embeddings=128, local_attention=4, global_attn_every_n_layers=3,
                  pad_token_id=wp.pad_token_id, bos_token_id=wp.cls_token_id, eos_token_id=wp.sep_token_id,
                  cls_token_id=wp.cls_token_id, sep_token_id=wp.sep_token_id)
    save(ModernBertForSequenceClassification(ModernBertConfig(**modern, classifier_pooling="mean", **sentiment)), wp, out,
         "modernbert-sequence-classification")
    save(ModernBertForSequenceClassification(ModernBertConfig(**modern, **nli)), wp, out, "modernbert-nli")
    save(ModernBertForTokenClassification(ModernBertConfig(**modern, norm_bias=True, attention_bias=True, mlp_bias=True,
                                                           classifier_bias=True, **ner)), wp, out,
         "modernbert-token-classification")
    save(ModernBertForMaskedLM(ModernBertConfig(**modern)), wp, out, "modernbert-masked-lm")


if __name__ == "__main__":
    main()
