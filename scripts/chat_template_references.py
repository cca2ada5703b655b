#!/usr/bin/env python3
"""Writes testdata/chat_templates/references.json: the chat templates of four real checkpoints rendered by
transformers' apply_chat_template (its renderer, transformers.utils.chat_template_utils.render_jinja_template,
with the variables apply_chat_template passes: the messages, tools and documents (none), add_generation_prompt
and the tokenizer's special tokens), for conversations of each kind the templates branch on. dfworker's
embedded Jinja2 must render the same bytes (tests/python/template_test.cc), or fail with the template's own
raise_exception message where transformers fails.

The templates (testdata/chat_templates/*.jinja) are the checkpoints' chat_template strings as llama.cpp keeps
verbatim copies of them (models/templates/ in llama.cpp, MIT; taken from the llama-cpp-python 0.3.36 sdist on
PyPI, vendor/llama.cpp/models/templates/), since this machine cannot reach the Hugging Face hub.

Usage: python3 scripts/chat_template_references.py   (needs transformers; run from the repository root)
"""
import json
import os

import transformers
from transformers.utils.chat_template_utils import render_jinja_template

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testdata", "chat_templates")

# Each checkpoint's special tokens as its tokenizer_config.json declares them (what special_tokens_map gives).
CHECKPOINTS = {
    "meta-llama-Llama-3.1-8B-Instruct.jinja": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "Qwen-Qwen2.5-7B-Instruct.jinja": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "google-gemma-2-2b-it.jinja": {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>"},
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"},
}

CONVERSATIONS = [
    ("user", [{"role": "user", "content": "What is the capital of France?"}], True),
    ("system-multi-turn", [{"role": "system", "content": "You are a robot."}, {"role": "user", "content": "Hello!"},
                           {"role": "assistant", "content": "Hello world!"}, {"role": "user", "content": "Sing."}], True),
    ("multi-turn-no-prompt", [{"role": "user", "content": "Hello!"}, {"role": "assistant", "content": "Hi."}], False),
    ("padded-and-non-ascii", [{"role": "user", "content": "  Crème brûlée 我爱北京 😀\n\n"}], True),
    ("roles-not-alternating", [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], True),
]


def main():
    out = {"transformers_version": transformers.__version__, "templates": []}
    for name, special in CHECKPOINTS.items():
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            template = f.read()
        cases = []
        for case, messages, prompt in CONVERSATIONS:
            entry = {"name": case, "messages": messages, "add_generation_prompt": prompt}
            try:
                rendered = render_jinja_template(conversations=[messages], tools=None, documents=None,
                                                 chat_template=template, add_generation_prompt=prompt, **special)
                entry["output"] = rendered[0][0] if isinstance(rendered, tuple) else rendered[0]
            except Exception as e:  # the template's raise_exception (jinja2 TemplateError)
                entry["error"] = str(e)
            cases.append(entry)
        out["templates"].append({"file": name, "special_tokens": special, "cases": cases})
    with open(os.path.join(HERE, "references.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
