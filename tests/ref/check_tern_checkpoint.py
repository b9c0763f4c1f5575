#!/usr/bin/python3
"""check_tern_checkpoint.py: does a model directory WRITTEN BY TERN load in an
independent Llama implementation and give the same log-probs?

Reads DIR/config.json and DIR/model.safetensors with the plain-torch
LlamaForCausalLM of llama_ref.py (which follows Hugging Face's semantics and
shares no code with tern), scores TEXT (byte tokens after BOS 256), and
compares every per-token log-prob with `tern score DIR --text TEXT`.

  tern model init --preset tiny /tmp/m
  /usr/bin/python3 tests/ref/check_tern_checkpoint.py /tmp/m build/bin/tern "some text"

Exit 0 when the largest difference is below 1e-4. Not run by CI (needs torch).
"""
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_ref  # noqa: E402  (the reference model and safetensors reader)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: check_tern_checkpoint.py MODEL_DIR TERN_BINARY TEXT")
    mdir, tern, text = sys.argv[1:]
    with open(os.path.join(mdir, "config.json")) as f:
        c = json.load(f)
    c.setdefault("rope_theta", 10000.0)
    names, params, _ = llama_ref.read_safetensors(os.path.join(mdir, "model.safetensors"))
    expected = [n for n, _ in llama_ref.param_layout(c)]
    missing = [n for n in expected if n not in params]
    if missing:
        sys.exit("tensors missing from the tern checkpoint: %s" % missing)
    p64 = {k: v.double() for k, v in params.items()}
    toks = torch.tensor([256] + list(text.encode("utf-8")), dtype=torch.long)
    logits = llama_ref.forward(p64, c, toks.unsqueeze(0))[0]
    ref_lp, _ = llama_ref.seq_stats(logits, toks)

    out = subprocess.run([tern, "score", mdir, "--text", text], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    tern_lp = [float(line.split("\t")[3]) for line in out if line and line[0].isdigit()]
    if len(tern_lp) != len(toks) - 1:
        sys.exit("tern scored %d tokens, expected %d" % (len(tern_lp), len(toks) - 1))
    worst = max(abs(a - float(b)) for a, b in zip(tern_lp, ref_lp[1:]))
    print("%d tensors read, %d tokens scored, max |tern - reference| log-prob = %.3g"
          % (len(names), len(tern_lp), worst))
    sys.exit(0 if worst < 1e-4 else 1)


if __name__ == "__main__":
    main()
