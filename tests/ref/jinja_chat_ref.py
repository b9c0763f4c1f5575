#!/usr/bin/env python3
"""Render real Hugging Face chat templates with transformers, for
tests/models/test_jinja.c: tests/fixtures/jinja_templates/<model>/template.jinja
(the template as the model ships it) and cases.json (conversations, tools,
flags and the text transformers renders, or the error it raises).

    python3 tests/ref/jinja_chat_ref.py [--out tests/fixtures/jinja_templates] [--templates DIR]

It makes (once) a venv in ~/.cache/tern/venv-ref with the pinned transformers
and jinja2 and re-runs itself there. The templates are read from DIR (default
/tmp/tpl), a copy of llama.cpp's models/templates/*.jinja (each case file names
its source); SmolLM2's comes from tests/fixtures/chat_templates. CI never runs
this; the tests read only the committed fixtures.
"""
import json
import os
import subprocess
import sys

PINS = ["transformers==4.46.3", "jinja2==3.1.6", "tokenizers==0.20.3"]
VENV = os.path.expanduser("~/.cache/tern/venv-ref")
LLAMA_CPP = "llama.cpp models/templates/{} (github.com/ggml-org/llama.cpp, read at commit 1eeb523c of a mirror)"

MODELS = [
    # name, template file, source, bos, eos
    ("qwen2_5", "Qwen-Qwen2.5-7B-Instruct.jinja", None, None, "<|im_end|>"),
    ("qwen3", "Qwen-Qwen3-0.6B.jinja", None, None, "<|im_end|>"),
    ("llama3_1", "meta-llama-Llama-3.1-8B-Instruct.jinja", None, "<|begin_of_text|>", "<|eot_id|>"),
    ("llama3_2", "meta-llama-Llama-3.2-3B-Instruct.jinja", None, "<|begin_of_text|>", "<|eot_id|>"),
    ("smollm2", None, "tests/fixtures/chat_templates/ollama-smollm2/tokenizer_config.json (@huggingface/ollama-utils 0.0.18 library/smollm2:135m)", "<|im_start|>", "<|im_end|>"),
    ("mistral_nemo", "mistralai-Mistral-Nemo-Instruct-2407.jinja", None, "<s>", "</s>"),
    ("gemma2", "google-gemma-2-2b-it.jinja", None, "<bos>", "<eos>"),
    ("phi3_5", "microsoft-Phi-3.5-mini-instruct.jinja", None, "<s>", "<|endoftext|>"),
]

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city, e.g. Zürich"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
ADD = {"type": "function", "function": {
    "name": "add", "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}

def call(name, args, id_="call12345"):
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}

U = lambda t: {"role": "user", "content": t}
A = lambda t: {"role": "assistant", "content": t}
S = lambda t: {"role": "system", "content": t}

CASES = {
    "user": ([U("What is 2+2?")], None, True, {}),
    "user_no_prompt": ([U("What is 2+2?")], None, False, {}),
    "system_user": ([S("You are terse."), U("What is 2+2?")], None, True, {}),
    "multi_turn": ([U("Hi!"), A("Hello. How can I help?"), U("Add 2 and 2.")], None, True, {}),
    "system_multi_turn": ([S("  Answer in French.\n"), U("Hi!"), A("Bonjour !"), U("Count to three, \"quoted\" and 'single'.")], None, False, {}),
    "unicode": ([U("Grüße, 世界! \u00e9\t\n tabs  "), A(" café ☕ "), U("naïve?")], None, True, {}),
    "tools": ([U("What is the weather in Zürich?")], [WEATHER, ADD], True, {}),
    "system_tools": ([S("Use tools when useful."), U("Add 3 and 4.")], [ADD], True, {}),
    "tool_calls": ([U("Add 3 and 4."),
                    {"role": "assistant", "content": "", "tool_calls": [call("add", {"a": 3, "b": 4})]},
                    {"role": "tool", "tool_call_id": "call12345", "name": "add", "content": "7"},
                    ], [ADD], True, {}),
    "tool_calls_answered": ([U("Weather in Bern?"),
                    {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Bern", "unit": "celsius"}, "abcDEF123")]},
                    {"role": "tool", "tool_call_id": "abcDEF123", "name": "get_weather", "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"},
                    A("It is 21.5 °C and clear in Bern."), U("Thanks!")], [WEATHER], True, {}),
    "think_history": ([U("Is 7 prime?"), A("<think>\nCheck divisors 2..2.\n</think>\n\nYes, 7 is prime."), U("And 9?")], None, True, {}),
    "think_off": ([U("Is 7 prime?")], None, True, {"enable_thinking": False}),
    "think_on": ([U("Is 7 prime?")], None, True, {"enable_thinking": True}),
    "think_last_assistant": ([U("Is 7 prime?"), A("<think>\nDivisors?\n</think>\n\nYes.")], None, False, {}),
}

# which cases each template is given (a template that raises for a case gets the error recorded)
PER_MODEL = {
    "qwen2_5": ["user", "user_no_prompt", "system_user", "multi_turn", "system_multi_turn", "unicode", "tools", "system_tools", "tool_calls", "tool_calls_answered"],
    "qwen3": list(CASES),
    "llama3_1": ["user", "user_no_prompt", "system_user", "multi_turn", "system_multi_turn", "unicode", "tools", "system_tools", "tool_calls", "tool_calls_answered"],
    "llama3_2": ["user", "user_no_prompt", "system_user", "multi_turn", "system_multi_turn", "unicode", "tools", "system_tools", "tool_calls"],
    "smollm2": ["user", "user_no_prompt", "system_user", "multi_turn", "system_multi_turn", "unicode"],
    "mistral_nemo": ["user", "user_no_prompt", "system_user", "multi_turn", "system_multi_turn", "unicode", "tools", "tool_calls", "tool_calls_answered"],
    "gemma2": ["user", "user_no_prompt", "system_user", "multi_turn", "unicode"],
    "phi3_5": ["user", "user_no_prompt", "system_user", "multi_turn", "system_multi_turn", "unicode"],
}
# Llama 3.2 dates its prompt with strftime_now unless date_string is given
EXTRA = {"llama3_2": {"date_string": "26 Jul 2024"}}


def ensure_venv():
    py = os.path.join(VENV, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
        subprocess.check_call([py, "-m", "pip", "install", "-q"] + PINS)
    os.execv(py, [py] + sys.argv)


def tokenizer(template, bos, eos):
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast
    vocab = {"<unk>": 0}
    for t in (bos, eos):
        if t:
            vocab.setdefault(t, len(vocab))
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="<unk>")),
                                  bos_token=bos, eos_token=eos)
    tok.chat_template = template
    return tok


def main():
    ensure_venv()
    import transformers
    out = "tests/fixtures/jinja_templates"
    tdir = "/tmp/tpl"
    args = sys.argv[1:]
    while args:
        if args[0] == "--out":
            out = args[1]
        elif args[0] == "--templates":
            tdir = args[1]
        args = args[2:]
    total = 0
    for name, fname, source, bos, eos in MODELS:
        if fname:
            template = open(os.path.join(tdir, fname), encoding="utf-8").read()
            source = LLAMA_CPP.format(fname)
        else:
            template = json.load(open(source.split(" ")[0], encoding="utf-8"))["chat_template"]
        tok = tokenizer(template, bos, eos)
        cases = []
        for cname in PER_MODEL[name]:
            msgs, tools, gen, extra = CASES[cname]
            kw = dict(EXTRA.get(name, {}), **extra)
            case = {"name": cname, "messages": msgs, "tools": tools, "add_generation_prompt": gen,
                    "variables": kw}
            try:
                case["expected"] = tok.apply_chat_template(msgs, tools=tools, add_generation_prompt=gen,
                                                           tokenize=False, **kw)
            except Exception as e:  # the template's raise_exception
                case["error"] = str(e)
            cases.append(case)
        os.makedirs(os.path.join(out, name), exist_ok=True)
        with open(os.path.join(out, name, "template.jinja"), "w", encoding="utf-8") as f:
            f.write(template)
        doc = {"source": source, "renderer": "transformers %s apply_chat_template(tokenize=False), jinja2 %s"
               % (transformers.__version__, __import__("jinja2").__version__),
               "bos_token": bos, "eos_token": eos, "cases": cases}
        with open(os.path.join(out, name, "cases.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
            f.write("\n")
        total += len(cases)
        print(name, len(cases), "cases,", sum("error" in c for c in cases), "errors")
    print(total, "cases in all")


if __name__ == "__main__":
    main()
