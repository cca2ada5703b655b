#!/usr/bin/env python3
"""Writes the tokenizer.json files of testdata/hf/tokenizers/ and what `tokenizers` returns for them
(testdata/hf/references/<name>-tokenizer.json, a name the pipeline
reference test skips). tests/tokenizers/tokenizer_families_test.cc compares
HfTokenizer with these files: ids, character offsets and decoded text exactly.

The tokenizers are trained here on a small multilingual corpus (accents precomposed and decomposed,
CJK, Hangul, emoji with ZWJ and skin tones, fullwidth forms, ligatures) and laid out as the model
families the project serves lay theirs out:
  unigram-xlmr        SentencePiece Unigram (sentencepiece-trained) with a real precompiled charsmap
                      (compiled by sentencepiece from a small rule table), XLM-R's normalizer/
                      pre-tokenizer/post-processor/decoder
  unigram-bytes       Unigram with byte_fallback and an NFKC normalizer (T5/DeBERTa-v3-style layout)
  bpe-llama2          SentencePiece-style BPE with <0xNN> byte tokens, Prepend+Replace normalizer and
                      Replace/ByteFallback/Fuse/Strip decoder (Llama-2)
  bpe-gemma           the same model, Replace normalizer, Replace/ByteFallback/Fuse decoder (Gemma)
  bpe-metaspace       the same model behind a Metaspace pre-tokenizer (prepend_scheme first, no split)
  bpe-bytelevel-ignore-merges
                      byte-level BPE with ignore_merges (Llama-3) and whole words added to the vocab
Each reference: {"tokenizer": FILE, "rows": [{"text", "ids", "type_ids", "offsets" (characters),
"decoded", "decoded_skip", "prefixes": [decode(ids[:k]) for k = 1..len] (rows with "prefixes")}]}.

(tokenizers' BPE trainer breaks ties between equally frequent pairs in hash order, so the BPE files
differ from run to run; every run's references match its own files.)

Usage: ~/.cache/dfworker/hf-venv/bin/python scripts/hf_tokenizer_references.py [HF_DIR]
       ... scripts/hf_tokenizer_references.py --nmt-nfkc DIR   (XLM-R's full charsmap, not committed)
(needs tokenizers and sentencepiece)
"""
import json
import os
import sys
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

BASE = [
    "The quick brown fox jumps over the lazy dog.",
    "Crème brûlée, naïve café — résumé and façade.",
    "Cre\u0300me bru\u0302le\u0301e with combining marks: e\u0301 a\u0308 n\u0303 o\u0302.",
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.",
    "我爱北京天安门，東京と大阪に行きます。",
    "한국어 문장도 있습니다. 안녕하세요!",
    "Emoji 😀🎉 family 👨\u200d👩\u200d👧 thumbs 👍🏽 flags 🇫🇷.",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ and ligatures ﬁne ﬂow, ½ cup, ① ② ③.",
    "Non\u00a0breaking\u2003spaces and soft\u00adhyphen, tab\tand newline\nend.",
    "Numbers 3.14, 2,718 and 1e-9; punctuation!? (yes) [no] {maybe}.",
    "Ελληνικά και русский текст, עברית ועربى.",
]
CORPUS = [s for s in BASE for _ in range(3)] + [
    "the of and to in is was for on that with as by at from this",
    "hello world hello there world peace piece of cake",
    "tokenizer tokens token tokenization normalize normalization",
]
TEXTS = BASE + [
    "", " ", "   leading and trailing   ", "a  b   c", "UPPER lower MiXeD",
    "unknown ☃ snowman ⚡ and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math",
    "x" * 40,
    "<s> added tokens </s> inside <mask> text",
    "e\u0301\u0301 double accent, ﬃ, ㎏, ℌ, Å (angstrom)",
    "<s>Crème</s>brûlée<mask>東京",
]
# More for the full nmt_nfkc charsmap (--nmt-nfkc): halfwidth kana, zero-width and control characters,
# compatibility forms, marks to reorder.
NMT_TEXTS = ["ｶﾀｶﾅ ﾊﾟﾝ ｶﾞ", "zero\u200bwidth \u2028 line", "control\u0007bell\u001e", "™ … ‘q’ “d” ⅷ ㍿ ﷺ",
             "각 각 가각", "a\u0323\u0301 ḍ̇ ǖ", "Å Ω K ﬀ ǆ"]
# Texts whose every id prefix is decoded too (mid-character cuts).
PREFIX_TEXTS = [
    "Emoji 😀🎉 family 👨\u200d👩\u200d👧 thumbs 👍🏽 flags 🇫🇷.",
    "我爱北京天安门，東京と大阪に行きます。",
    "unknown ☃ snowman ⚡ and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math",
]
PAIRS = [("Crème brûlée", "This is about cooking."), ("東京", "한국어")]

# A small rule table in sentencepiece's normalization TSV format (source code points, tab, target
# code points); sentencepiece compiles it into the darts-clone charsmap XLM-R's files carry.
RULES = {
    # fullwidth ASCII → ASCII
    **{chr(0xFF01 + i): chr(0x21 + i) for i in range(0x5E)},
    "\u00a0": " ", "\u2003": " ", "\u3000": " ", "\t": " ", "\n": " ",
    "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\u00bd": "1\u20442",
    "\u2460": "1", "\u2461": "2", "\u2462": "3", "\u338f": "kg", "\u210c": "H", "\u212b": "\u00c5",
    "e\u0301": "\u00e9", "e\u0300": "\u00e8", "a\u0308": "\u00e4", "n\u0303": "\u00f1", "o\u0302": "\u00f4",
    "u\u0302": "\u00fb", "e\u0301\u0301": "\u00e9",
    "\u00ad": "",  # soft hyphen dropped
    "\U0001D518": "U", "\U0001D52B": "n",
}


def write_rules(path):
    with open(path, "w", encoding="utf-8") as f:
        for src, dst in RULES.items():
            f.write(" ".join("%04X" % ord(c) for c in src) + "\t" + " ".join("%04X" % ord(c) for c in dst) + "\n")


def train_sentencepiece(tmp, model_type, vocab_size, byte_fallback, rules, rule_name="identity"):
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(CORPUS) + "\n")
    prefix = os.path.join(tmp, f"sp-{model_type}-{int(byte_fallback)}")
    kwargs = dict(input=corpus, model_prefix=prefix, model_type=model_type, vocab_size=vocab_size,
                  hard_vocab_limit=False, character_coverage=0.98, byte_fallback=byte_fallback,
                  bos_id=0, pad_id=1, eos_id=2, unk_id=3, num_threads=1, minloglevel=2)
    if rules:
        kwargs["normalization_rule_tsv"] = rules
    else:
        kwargs["normalization_rule_name"] = rule_name
    spm.SentencePieceTrainer.train(**kwargs)
    proto = sentencepiece_model_pb2.ModelProto()
    with open(prefix + ".model", "rb") as f:
        proto.ParseFromString(f.read())
    return proto


def metaspace(scheme="always", split=True):
    return pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=scheme, split=split)


def unigram_xlmr(tmp, rule_name=None):
    """XLM-R's layout; with `rule_name` ("nmt_nfkc", XLM-R's own) sentencepiece's full rule table."""
    rules = None
    if rule_name is None:
        rules = os.path.join(tmp, "rules.tsv")
        write_rules(rules)
    proto = train_sentencepiece(tmp, "unigram", 400, False, rules, rule_name)
    # XLM-R's layout: <s> <pad> </s> <unk>, the pieces, <mask>.
    vocab = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    vocab += [(p.piece, p.score) for p in proto.pieces[4:]] + [("<mask>", 0.0)]
    tok = Tokenizer(models.Unigram(vocab, 3, False))
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(proto.normalizer_spec.precompiled_charsmap),
                                           normalizers.Strip(left=False, right=True),
                                           normalizers.Replace(Regex(" {2,}"), "▁")])
    tok.pre_tokenizer = metaspace()
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
                                                       special_tokens=[("<s>", 0), ("</s>", 2)])
    tok.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>", AddedToken("<mask>", lstrip=True, special=True)])
    return tok


def unigram_bytes(tmp):
    proto = train_sentencepiece(tmp, "unigram", 700, True, None)
    vocab = [(p.piece, p.score) for p in proto.pieces]
    tok = Tokenizer(models.Unigram(vocab, 3, True))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = metaspace()
    tok.decoder = decoders.Sequence([decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True),
                                     decoders.ByteFallback(), decoders.Fuse()])
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                       special_tokens=[("</s>", 2)])
    tok.add_special_tokens(["<s>", "<pad>", "</s>", "<unk>"])
    return tok


def sentencepiece_bpe(tmp):
    """Llama-2's model: <unk> <s> </s>, the 256 byte tokens, then the BPE pieces and merges."""
    trainer = trainers.BpeTrainer(vocab_size=420, limit_alphabet=70, show_progress=False)
    t = Tokenizer(models.BPE())
    t.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    t.train_from_iterator(CORPUS, trainer)
    model = json.loads(t.to_str())["model"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab["<0x%02X>" % b] = len(vocab)
    for piece, _ in sorted(model["vocab"].items(), key=lambda kv: kv[1]):
        vocab.setdefault(piece, len(vocab))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return vocab, merges


def bpe_family(vocab, merges, layout):
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    replace_space = normalizers.Replace(" ", "▁")
    if layout == "llama2":
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), replace_space])
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    elif layout == "gemma":
        tok.normalizer = replace_space
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    else:
        tok.pre_tokenizer = metaspace("first", split=False)
        tok.decoder = decoders.Sequence([decoders.Metaspace(replacement="▁", prepend_scheme="first", split=False),
                                         decoders.ByteFallback(), decoders.Fuse()])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", 1)])
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    return tok


def bytelevel_ignore_merges():
    trainer = trainers.BpeTrainer(vocab_size=500, show_progress=False, special_tokens=["<|begin_of_text|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.train_from_iterator(CORPUS, trainer)
    model = json.loads(t.to_str())["model"]
    vocab = dict(model["vocab"])
    # Whole words with no merges that build them: only ignore_merges finds them.
    for w in ("Ġsnowman", "Ġunknown", "Ġmath", "Ġdouble"):
        vocab.setdefault(w, len(vocab))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tok = Tokenizer(models.BPE(vocab, merges, ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B",
                                                       special_tokens=[("<|begin_of_text|>", 0)])
    tok.add_special_tokens(["<|begin_of_text|>"])
    return tok


# Llama-3's pre-tokenizer regex (its tokenizer.json, "pre_tokenizer": Sequence[Split(Regex, Isolated),
# ByteLevel(use_regex false)]); Qwen2's differs only in \p{N} instead of \p{N}{1,3}.
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")


def bytelevel_split_llama3():
    """Llama-3's layout: Split (regex, Isolated) then ByteLevel without its own regex, ignore_merges."""
    split = pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False)
    pre = pre_tokenizers.Sequence([split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    trainer = trainers.BpeTrainer(vocab_size=500, show_progress=False, special_tokens=["<|begin_of_text|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre
    t.train_from_iterator(CORPUS, trainer)
    model = json.loads(t.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tok = Tokenizer(models.BPE(dict(model["vocab"]), merges, ignore_merges=True))
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B",
                                                       special_tokens=[("<|begin_of_text|>", 0)])
    tok.add_special_tokens(["<|begin_of_text|>"])
    return tok


def reference(tok, name, extra=()):
    rows = []
    for t in TEXTS + list(extra):
        e = tok.encode(t)
        row = {"text": t, "ids": e.ids, "type_ids": e.type_ids, "offsets": e.offsets,
               "decoded": tok.decode(e.ids, skip_special_tokens=False),
               "decoded_skip": tok.decode(e.ids, skip_special_tokens=True)}
        if t in PREFIX_TEXTS:
            row["prefixes"] = [tok.decode(e.ids[:k], skip_special_tokens=True) for k in range(1, len(e.ids) + 1)]
        rows.append(row)
    for a, b in PAIRS:
        e = tok.encode(a, b)
        rows.append({"text": a, "pair": b, "ids": e.ids, "type_ids": e.type_ids, "offsets": e.offsets,
                     "decoded": tok.decode(e.ids, skip_special_tokens=False),
                     "decoded_skip": tok.decode(e.ids, skip_special_tokens=True)})
    return {"tokenizer": f"tokenizers/{name}.json", "rows": rows}


def write(root, name, tok, extra=()):
    path = os.path.join(root, "tokenizers", name + ".json")
    tok.save(path, pretty=False)
    tok = Tokenizer.from_file(path)  # the references come from the file as written
    with open(os.path.join(root, "references", f"{name}-tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(reference(tok, name, extra), f, ensure_ascii=False, separators=(",", ":"))
    print("wrote", name, os.path.getsize(path), "bytes")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--nmt-nfkc":
        # XLM-R's own normalizer, sentencepiece's nmt_nfkc charsmap (240 KB: too large to commit):
        # written to DIR/{tokenizers,references} for HfTokenizerFamilies.MatchesTheFullNmtNfkcCharsmap
        # (DFW_HF_NMT_NFKC_DIR=DIR).
        root = sys.argv[2]
        os.makedirs(os.path.join(root, "tokenizers"), exist_ok=True)
        os.makedirs(os.path.join(root, "references"), exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            write(root, "unigram-nmt", unigram_xlmr(tmp, "nmt_nfkc"), NMT_TEXTS)
        return
    if len(sys.argv) >= 2 and sys.argv[1] == "--only-split":
        # Only the Split (Llama-3) tokenizer: the BPE trainer breaks ties in hash order, so
        # regenerating the others would change them without reason.
        root = sys.argv[2] if len(sys.argv) > 2 else "testdata/hf"
        write(root, "bpe-llama3-split", bytelevel_split_llama3(),
              ["I'm here, you'll see: it's 12345 tokens!\n\n  Two  spaces\r\nand CRLF.", "don'T SHOUT'S 'quoted'"])
        return
    root = sys.argv[1] if len(sys.argv) > 1 else "testdata/hf"
    os.makedirs(os.path.join(root, "tokenizers"), exist_ok=True)
    os.makedirs(os.path.join(root, "references"), exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        toks = {"unigram-xlmr": unigram_xlmr(tmp), "unigram-bytes": unigram_bytes(tmp)}
        vocab, merges = sentencepiece_bpe(tmp)
    for layout in ("llama2", "gemma", "metaspace"):
        toks[f"bpe-{layout}"] = bpe_family(vocab, merges, layout)
    toks["bpe-bytelevel-ignore-merges"] = bytelevel_ignore_merges()
    toks["bpe-llama3-split"] = bytelevel_split_llama3()
    for name, tok in toks.items():
        write(root, name, tok)


if __name__ == "__main__":
    main()
