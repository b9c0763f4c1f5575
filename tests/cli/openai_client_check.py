#!/usr/bin/env python3
"""The real `openai` client (PyPI) against `tern serve` (docs/serve.md).

Run by tests/cli/test_serve_openai.c, which starts two servers: the Qwen2
chat fixture behind an API key, and the scripted_model test plugin, which
always writes one call of the function `add`. Prints one "ok NAME" line per
check and exits 1 at the first that fails, naming it.

  openai_client_check.py BASE_URL API_KEY MODEL TOOLS_BASE_URL TOOLS_MODEL
"""
import json
import sys

import openai

base, key, model, tools_base, tools_model = sys.argv[1:6]
client = openai.OpenAI(base_url=base, api_key=key, max_retries=0, timeout=120)
tools_client = openai.OpenAI(base_url=tools_base, api_key="none", max_retries=0, timeout=120)
USER = [{"role": "user", "content": "Hi"}]
ADD = [{"type": "function", "function": {
    "name": "add", "description": "Add two numbers",
    "parameters": {"type": "object", "properties": {"a": {"type": "number"},
                                                    "b": {"type": "number"}},
                   "required": ["a", "b"]}}}]


def check(name, ok, detail=""):
    if not ok:
        print(f"FAILED {name}: {detail}")
        sys.exit(1)
    print(f"ok {name}")


ids = [m.id for m in client.models.list()]
check("models.list", model in ids, ids)

r = client.chat.completions.create(model=model, messages=USER, max_tokens=8, seed=1)
check("chat", isinstance(r.choices[0].message.content, str) and r.usage.completion_tokens > 0,
      r)
again = client.chat.completions.create(model=model, messages=USER, max_tokens=8, seed=1)
check("chat seed", again.choices[0].message.content == r.choices[0].message.content)

r = client.chat.completions.create(model=model, messages=USER, max_tokens=6, n=3, seed=2)
check("chat n=3", len(r.choices) == 3 and [c.index for c in r.choices] == [0, 1, 2], r)

r = client.chat.completions.create(model=model, messages=USER, max_tokens=6, seed=3,
                                   logprobs=True)
lp = r.choices[0].logprobs.content
check("chat logprobs", len(lp) > 0 and all(t.logprob <= 0 and t.bytes is not None for t in lp),
      lp)

r = client.chat.completions.create(model=model, messages=USER, max_tokens=6, seed=3,
                                   logprobs=True, top_logprobs=3)
lp = r.choices[0].logprobs.content
check("chat top_logprobs", len(lp) > 0 and all(
    len(t.top_logprobs) == 3 and all(a.logprob <= 0 and a.bytes is not None
                                     for a in t.top_logprobs) and
    t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob >= t.top_logprobs[2].logprob
    for t in lp), lp)

plain = client.chat.completions.create(model=model, messages=USER, max_tokens=12, seed=4)
text, usage, finish = "", None, None
for chunk in client.chat.completions.create(model=model, messages=USER, max_tokens=12, seed=4,
                                            stream=True, stream_options={"include_usage": True}):
    if chunk.usage:
        usage = chunk.usage
    for c in chunk.choices:
        text += c.delta.content or ""
        finish = c.finish_reason or finish
check("chat stream", text == plain.choices[0].message.content and
      finish == plain.choices[0].finish_reason and usage is not None and
      usage.completion_tokens == plain.usage.completion_tokens, (text, plain))

r = client.completions.create(model=model, prompt="Hello", max_tokens=5, seed=5, logprobs=0)
check("completions", isinstance(r.choices[0].text, str) and
      len(r.choices[0].logprobs.tokens) == len(r.choices[0].logprobs.token_logprobs), r)
r = client.completions.create(model=model, prompt="Hello", max_tokens=5, seed=5, logprobs=2)
tops = r.choices[0].logprobs.top_logprobs
check("completions logprobs=2", len(tops) == len(r.choices[0].logprobs.tokens) and
      all(1 <= len(t) <= 2 and all(v <= 0 for v in t.values()) for t in tops), r)

r = tools_client.chat.completions.create(
    model=tools_model, messages=[{"role": "user", "content": "2+3?"}], tools=ADD,
    max_tokens=64)
msg = r.choices[0].message
call = msg.tool_calls[0] if msg.tool_calls else None
check("tools", r.choices[0].finish_reason == "tool_calls" and call is not None and
      call.type == "function" and call.function.name == "add" and
      json.loads(call.function.arguments) == {"a": 2, "b": 3}, r)
history = [{"role": "user", "content": "2+3?"}, msg.model_dump(exclude_none=True),
           {"role": "tool", "tool_call_id": call.id, "content": "5"}]
r = tools_client.chat.completions.create(model=tools_model, messages=history, tools=ADD,
                                         max_tokens=64)
check("tools: the result sent back", r.choices[0].message is not None, r)
calls = {}
for chunk in tools_client.chat.completions.create(
        model=tools_model, messages=[{"role": "user", "content": "2+3?"}], tools=ADD,
        max_tokens=64, stream=True):
    for c in chunk.choices:
        for d in c.delta.tool_calls or []:
            got = calls.setdefault(d.index, {"name": "", "arguments": ""})
            got["name"] += d.function.name or ""
            got["arguments"] += d.function.arguments or ""
check("tools stream", len(calls) == 1 and calls[0]["name"] == "add" and
      json.loads(calls[0]["arguments"]) == {"a": 2, "b": 3}, calls)


def refused(name, error, code=None, **kw):
    try:
        client.chat.completions.create(**{"model": model, "messages": USER, "max_tokens": 4,
                                          **kw})
    except error as e:
        check(name, code is None or getattr(e, "code", None) == code, (e, e.body))
        return
    except openai.APIStatusError as e:
        check(name, False, f"{type(e).__name__} {e.status_code}: {e.body}")
    check(name, False, "no error")


refused("error: unknown argument", openai.BadRequestError, "unrecognized_argument",
        extra_body={"bogus": 1})
refused("error: n too large", openai.BadRequestError, n=99)
refused("error: temperature", openai.BadRequestError, temperature=5)
refused("error: top_logprobs without logprobs", openai.BadRequestError, top_logprobs=3)
refused("error: tool_choice without tools", openai.BadRequestError, tool_choice="required")
refused("error: unknown model", openai.NotFoundError, "model_not_found", model="gpt-4o")
refused("error: context length", openai.BadRequestError, "context_length_exceeded",
        messages=[{"role": "user", "content": "a " * 2000}])
refused("error: bad role", openai.BadRequestError, messages=[{"role": "robot", "content": "x"}])
try:
    openai.OpenAI(base_url=base, api_key="wrong-key", max_retries=0).chat.completions.create(
        model=model, messages=USER, max_tokens=2)
    check("error: wrong API key", False, "no error")
except openai.AuthenticationError as e:
    check("error: wrong API key", e.status_code == 401, e)
try:
    client.chat.completions.create(model=model, max_tokens=2,
                                   messages=[{"role": "user", "content": "x" * (5 << 20)}])
    check("error: body too large", False, "no error")
except openai.APIStatusError as e:
    check("error: body too large", e.status_code == 413, e)
print("all checks passed")
