#!/usr/bin/env python3
"""adamw_ref.py: reference values for tern's AdamW (plugins/models/transformer/
decoder/adamw.c) from torch.optim.AdamW, written to
tests/fixtures/adamw/adamw_ref.json for tests/models/test_adamw.c.

A tiny Llama's parameters (the tensors tern's flat array holds for the config
below, in its order: names and shapes, checked by the test against
llama_tensor_describe) start from fixed random values; four steps of given
gradients are applied with
  - weight decay on the matrices only (two parameter groups, as tern decays
    2-D tensors and spares norm weights),
  - global-norm clipping (torch.nn.utils.clip_grad_norm_, the norm before
    clipping recorded),
  - Adam's bias corrections (torch's own),
and the parameters after each step are recorded. Step 2's gradients are
large so that clipping acts; the others are not clipped.

CI never runs this script: the test reads the committed fixture.
  /usr/bin/python3 tests/ref/adamw_ref.py --out tests/fixtures/adamw
Generated with Debian's python3-torch 1.13.
"""
import argparse
import json
import os

import torch

# The config: Llama, V=5, D=4, F=6, L=1, H=2, KV=1 (head dim 2), lm_head untied.
V, D, F, H, KV = 5, 4, 6, 2, 1
HD = D // H
TENSORS = [
    ("model.embed_tokens.weight", [V, D]),
    ("model.layers.0.input_layernorm.weight", [D]),
    ("model.layers.0.self_attn.q_proj.weight", [H * HD, D]),
    ("model.layers.0.self_attn.k_proj.weight", [KV * HD, D]),
    ("model.layers.0.self_attn.v_proj.weight", [KV * HD, D]),
    ("model.layers.0.self_attn.o_proj.weight", [D, H * HD]),
    ("model.layers.0.post_attention_layernorm.weight", [D]),
    ("model.layers.0.mlp.gate_proj.weight", [F, D]),
    ("model.layers.0.mlp.up_proj.weight", [F, D]),
    ("model.layers.0.mlp.down_proj.weight", [D, F]),
    ("model.norm.weight", [D]),
    ("lm_head.weight", [V, D]),
]
HP = {"lr": 1e-2, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1,
      "grad_clip": 1.0}
STEPS = 4
GRAD_SCALE = [0.05, 3.0, 0.02, 0.06]  # step 2's global norm is far above grad_clip


def flat(ts):
    return [float(x) for t in ts for x in t.detach().reshape(-1).tolist()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    g = torch.Generator().manual_seed(20261125)
    params = [torch.nn.Parameter(torch.randn(shape, generator=g, dtype=torch.float32) * 0.5)
              for _, shape in TENSORS]
    init = flat(params)
    decay = [p for (n, s), p in zip(TENSORS, params) if len(s) == 2]
    plain = [p for (n, s), p in zip(TENSORS, params) if len(s) != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": HP["weight_decay"]},
                             {"params": plain, "weight_decay": 0.0}],
                            lr=HP["lr"], betas=(HP["beta1"], HP["beta2"]), eps=HP["eps"])
    steps = []
    for k in range(STEPS):
        grads = [torch.randn(shape, generator=g, dtype=torch.float32) * GRAD_SCALE[k]
                 for _, shape in TENSORS]
        for p, gr in zip(params, grads):
            p.grad = gr.clone()
        norm = torch.nn.utils.clip_grad_norm_(params, HP["grad_clip"])
        opt.step()
        steps.append({"grads": flat(grads), "norm": float(norm), "params": flat(params)})
    # the clipping must have acted at step 2 only, else the fixture tests less
    assert steps[1]["norm"] > HP["grad_clip"]
    assert all(s["norm"] < HP["grad_clip"] for i, s in enumerate(steps) if i != 1)
    out = {"torch": torch.__version__, "config": {"vocab_size": V, "hidden_size": D,
                                                  "intermediate_size": F, "n_layers": 1,
                                                  "n_heads": H, "n_kv_heads": KV},
           "hparams": HP, "tensors": [{"name": n, "shape": s} for n, s in TENSORS],
           "init": init, "steps": steps}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "adamw_ref.json"), "w") as f:
        json.dump(out, f, indent=0)
        f.write("\n")


if __name__ == "__main__":
    main()
