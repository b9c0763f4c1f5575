#!/usr/bin/python3
"""qwen2_chat_ref.py: a small Qwen2-shaped chat model for tern's end-to-end
test (tests/cli/test_hf_run.c), and the PyTorch check that a checkpoint tern
saved from it loads back with the same log-probs.

  make DIR
      Writes DIR/ (tests/fixtures/qwen2_chat/): a Qwen2ForCausalLM
      config.json, random weights stored as BF16 (as Qwen releases them), and
      the Qwen2.5 byte-level BPE tokenizer cut down further from the
      tokenizer fixture (tests/fixtures/tokenizers/qwen2/: the first
      MERGES merges, the 22 added tokens renumbered to follow them) with its
      tokenizer_config.json (the real Qwen2.5 chat template, eos <|im_end|>).

  check DIR TERN_BINARY
      Reads DIR/config.json and DIR/model.safetensors (a checkpoint tern
      wrote, e.g. runs/NAME/checkpoints/step-N/policy) into the plain-torch
      Qwen2 of hf_models_ref.py, which shares no code with tern; scores a
      chat-formatted text with `tern score DIR --text TEXT` and compares
      every per-token log-prob. Exit 0 when the largest difference is below
      1e-4.

CI never runs this (it needs torch); the fixture is committed.
"""
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_models_ref as ref  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER_FIXTURE = os.path.join(HERE, "..", "fixtures", "tokenizers", "qwen2")
MERGES = 400
SEED = 20261122

TEXT = ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
        "assistant.<|im_end|>\n<|im_start|>user\n42+29=<|im_end|>\n<|im_start|>assistant\n"
        "71<|im_end|>")


def cut_tokenizer():
    """The fixture tokenizer with only the first MERGES merges; added tokens
    renumbered right after the kept vocabulary."""
    with open(os.path.join(TOKENIZER_FIXTURE, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    with open(os.path.join(TOKENIZER_FIXTURE, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    model = tok["model"]
    vocab = model["vocab"]
    merges = [m if isinstance(m, list) else m.split(" ") for m in model["merges"]][:MERGES]
    keep = {t: i for t, i in vocab.items() if i < 256}
    for a, b in merges:
        keep.setdefault(a + b, vocab[a + b])
    for a, b in merges:
        if a not in keep or b not in keep:
            ref.fail("merge %s %s uses a token outside the cut" % (a, b))
    ids = sorted(keep.values())
    remap = {old: new for new, old in enumerate(ids)}
    model["vocab"] = {t: remap[i] for t, i in sorted(keep.items(), key=lambda kv: kv[1])}
    model["merges"] = [[a, b] for a, b in merges]
    n = len(ids)
    added_remap = {}
    for k, a in enumerate(sorted(tok["added_tokens"], key=lambda a: a["id"])):
        added_remap[str(a["id"])] = str(n + k)
        a["id"] = n + k
    cfg["added_tokens_decoder"] = {added_remap[k]: v
                                   for k, v in cfg["added_tokens_decoder"].items()}
    return tok, cfg, n + len(tok["added_tokens"])


def config_for(vocab, tok):
    eos = next(a["id"] for a in tok["added_tokens"] if a["content"] == "<|endoftext|>")
    return {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
        "attention_dropout": 0.0, "hidden_act": "silu", "hidden_size": 32,
        "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 256,
        "max_window_layers": 2, "num_attention_heads": 4, "num_hidden_layers": 2,
        "num_key_value_heads": 2, "rms_norm_eps": 1e-6, "rope_scaling": None,
        "rope_theta": 1000000.0, "sliding_window": 256, "tie_word_embeddings": True,
        "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False,
        "vocab_size": vocab, "bos_token_id": eos, "eos_token_id": eos,
    }


def make(out):
    tok, tcfg, vocab = cut_tokenizer()
    cfg = config_for(vocab, tok)
    layout = ref.llama_like_layout(cfg, qkv_bias=True, o_bias=False, mlp_bias=False)
    gen = torch.Generator().manual_seed(SEED)
    params = ref.init_params(layout, gen)
    # small logits: a random model this small otherwise puts all its mass on
    # a few tokens and never closes the turn, which a run must see happen
    for name, _, kind in layout:
        if kind == "embed":
            params[name] = 0.05 * params[name]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    ref.write_safetensors(os.path.join(out, "model.safetensors"),
                          [(n, params[n], "BF16") for n, _, _ in layout])
    with open(os.path.join(out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, indent=1)
        f.write("\n")
    with open(os.path.join(out, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tcfg, f, ensure_ascii=False, indent=2)
        f.write("\n")
    print("%s: vocab %d (%d merges), %d parameters" %
          (out, vocab, MERGES, sum(p.numel() for p in params.values())))


def check(mdir, tern):
    with open(os.path.join(mdir, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    with open(os.path.join(mdir, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    if cfg.get("model_type") != "qwen2":
        ref.fail("%s: model_type %r, not qwen2" % (mdir, cfg.get("model_type")))
    params = ref.read_safetensors(os.path.join(mdir, "model.safetensors"))
    layout = ref.llama_like_layout(cfg, qkv_bias=True, o_bias=False, mlp_bias=False)
    missing = [n for n, _, _ in layout if n not in params]
    if missing:
        ref.fail("tensors missing from the checkpoint: %s" % missing)
    out = subprocess.run([tern, "score", mdir, "--text", TEXT], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    rows = [line.split("\t") for line in out if line and line[0].isdigit()]
    # the first token has no prediction and is not printed: the text starts
    # with <|im_start|>, whose id the tokenizer gives
    first = next(a["id"] for a in tok["added_tokens"] if a["content"] == "<|im_start|>")
    toks = torch.tensor([first] + [int(r[1]) for r in rows], dtype=torch.long)
    p64 = {k: v.double() for k, v in params.items()}
    logits = ref.llama_like_forward(p64, cfg, toks, True, False, False)
    ref_lp, _ = ref.seq_stats(logits, toks)
    tern_lp = [float(r[3]) for r in rows]
    worst = max(abs(a - float(b)) for a, b in zip(tern_lp, ref_lp[1:].tolist()))
    print("%d tokens scored, max |tern - reference| log-prob = %.3g" % (len(tern_lp), worst))
    sys.exit(0 if worst < 1e-4 else 1)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: qwen2_chat_ref.py make DIR | check MODEL_DIR TERN_BINARY")


if __name__ == "__main__":
    main()
