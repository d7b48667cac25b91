#!/usr/bin/python3
"""Renders the chat templates beside this script with Python's Jinja2 configured exactly as Hugging Face
transformers' apply_chat_template configures it (ImmutableSandboxedEnvironment, trim_blocks=True,
lstrip_blocks=True, the loopcontrols extension, its tojson filter and its raise_exception/strftime_now globals;
messages, tools=None, documents=None, add_generation_prompt and the special tokens as variables), and writes
expected.json. The expected strings are this program's output: never edit them by hand.

Run with Debian's python3-jinja2:  /usr/bin/python3 generate-expected.py > expected.json
"""
import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now

TEMPLATES = {
    # name: (file, special tokens as the model's tokenizer_config.json names them, extra variables)
    "llama-3.2": ("Llama-3.2-3B-Instruct.jinja", {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
                  {"date_string": "26 Jul 2024"}),
    "qwen2": ("Qwen2-7B-Instruct.jinja", {"bos_token": None, "eos_token": "<|im_end|>"}, {}),
    "smollm2": ("SmolLM2-1.7B-Instruct.jinja", {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"}, {}),
}

CONVERSATIONS = [
    ([{"role": "user", "content": "Hi!"}], True),
    ([{"role": "system", "content": "You are terse."},
      {"role": "user", "content": "What is 2+2?"},
      {"role": "assistant", "content": "4"},
      {"role": "user", "content": "And 3+3?"}], True),
    ([{"role": "system", "content": "  Padded system.  \n"},
      {"role": "user", "content": "  spaces and\nnew lines \n\n"}], False),
    ([{"role": "user", "content": "Ünïcödé ✓ 漢字 \"quotes\" {{ not a tag }} {% raw %}"},
      {"role": "assistant", "content": "ok"}], False),
]

out = {"generator": "Python %s, Jinja2 %s" % (sys.version.split()[0], jinja2.__version__), "templates": []}
for name, (file, special, extra) in TEMPLATES.items():
    with open(file, encoding="utf-8") as f:
        source = f.read()
    template = env.from_string(source)
    cases = []
    for messages, add_generation_prompt in CONVERSATIONS:
        variables = dict(special)
        variables.update(extra)
        text = template.render(messages=messages, tools=None, documents=None,
                               add_generation_prompt=add_generation_prompt, **variables)
        cases.append({"messages": messages, "add_generation_prompt": add_generation_prompt, "expected": text})
    out["templates"].append({"name": name, "file": file, "special_tokens": special, "variables": extra,
                             "cases": cases})
json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
sys.stdout.write("\n")
