#!/usr/bin/python3
"""llava_ref.py: PyTorch reference for the parity test of tern's
vision-language model (issue 27): a LLaVA-style model, a CLIP ViT encoder, a
two-layer projector and a Llama decoder, with the image's features placed at
the image token's positions, as Hugging Face's LlavaForConditionalGeneration
computes it (written out in plain torch, float64; `transformers` is needed
only for --check, which compares with LlavaForConditionalGeneration).

The micro model ("llava_micro"):
  vision: CLIP, image 16x16 RGB, patch 4 (16 patches + CLS), hidden 24,
          intermediate 48, 3 layers, 4 heads, quick_gelu, LayerNorm eps 1e-5;
          features from the second-to-last layer's output (vision_feature_layer
          -2), CLS dropped ("default"): 16 rows of 24
  projector: linear_1 [32, 24] + bias, gelu (erf), linear_2 [32, 32] + bias
  text:   Llama, vocabulary 260 (bytes, BOS 256, EOS 257, PAD 258, image 259),
          hidden 32, intermediate 80, 2 layers, 4 heads, 2 KV heads, RoPE
          theta 10000, RMSNorm eps 1e-5, untied head

Writes to OUT (default tests/fixtures/llava_micro):
  config.json            LlavaConfig as transformers writes it (text_config,
                         vision_config, image_token_index, ...)
  model.safetensors      the weights, F32, in the layout transformers 5.x
                         save_pretrained writes (vision_tower.X without
                         vision_model., multi_modal_projector.X,
                         language_model.model.X, language_model.lm_head.weight)
  tokenizer.json         tern's byte tokenizer (what the plugin loads with it)
  reference.safetensors  rgb.s [16, 16, 3] (the 8-bit image, as values 0-255),
                         pixels.s [3, 16, 16] (it normalised with CLIP's mean and
                         std, as pixel_values),
                         tokens.s, logits.s, logp.s, coef_logp.s for the two
                         sequences s = 0, 1; features.s [16, 32] (the
                         projected image rows); grad.<name> = dJ/dθ for every
                         weight under its file name, J = sum_s sum_i
                         coef_logp[i] logp[i] (coefficients only after the
                         image); all F32, computed in float64 from the F32
                         weights as stored
  reference.json         sizes, J, the check's figures

Usage (CI never runs this; the outputs are committed):
  /usr/bin/python3 tests/ref/llava_ref.py --out tests/fixtures/llava_micro
  /opt/refenv/bin/python tests/ref/llava_ref.py --out DIR --check
Dependencies: Python 3, torch, numpy (transformers for --check).
"""

import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_ref import CONFIG as LLAMA_MICRO  # noqa: E402
from llama_ref import rmsnorm, rope_cos_sin, rotate_half, write_safetensors  # noqa: E402

SEED = 20261127
IMAGE_TOKEN = 259

VISION = {
    "model_type": "clip_vision_model",
    "hidden_size": 24,
    "intermediate_size": 48,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_channels": 3,
    "image_size": 16,
    "patch_size": 4,
    "hidden_act": "quick_gelu",
    "layer_norm_eps": 1e-5,
}
# the Llama micro model's text side (llama_ref.py), one token more: the image's
TEXT = {"model_type": "llama", **LLAMA_MICRO, "vocab_size": IMAGE_TOKEN + 1}
CONFIG = {
    "architectures": ["LlavaForConditionalGeneration"],
    "model_type": "llava",
    "image_token_index": IMAGE_TOKEN,
    "image_seq_length": 16,
    "projector_hidden_act": "gelu",
    "vision_feature_layer": -2,
    "vision_feature_select_strategy": "default",
    "multimodal_projector_bias": True,
    "tie_word_embeddings": False,
    "text_config": TEXT,
    "vision_config": VISION,
}
TEXTS = [b"How many?", b"What colour is it? Say"]


def layout():
    """[(file name, shape)] of every weight, in file order."""
    D, I, L = VISION["hidden_size"], VISION["intermediate_size"], VISION["num_hidden_layers"]
    C, P = VISION["num_channels"], VISION["patch_size"]
    N = (VISION["image_size"] // P) ** 2
    out = [("vision_tower.embeddings.patch_embedding.weight", (D, C, P, P)),
           ("vision_tower.embeddings.class_embedding", (D,)),
           ("vision_tower.embeddings.position_embedding.weight", (N + 1, D)),
           ("vision_tower.pre_layrnorm.weight", (D,)), ("vision_tower.pre_layrnorm.bias", (D,))]
    for li in range(L):
        pre = "vision_tower.encoder.layers.%d." % li
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            out += [(pre + "self_attn.%s.weight" % n, (D, D)), (pre + "self_attn.%s.bias" % n, (D,))]
        out += [(pre + "layer_norm1.weight", (D,)), (pre + "layer_norm1.bias", (D,)),
                (pre + "mlp.fc1.weight", (I, D)), (pre + "mlp.fc1.bias", (I,)),
                (pre + "mlp.fc2.weight", (D, I)), (pre + "mlp.fc2.bias", (D,)),
                (pre + "layer_norm2.weight", (D,)), (pre + "layer_norm2.bias", (D,))]
    # in the file though LLaVA never uses it (it feeds CLIP's pooled output)
    out += [("vision_tower.post_layernorm.weight", (D,)), ("vision_tower.post_layernorm.bias", (D,))]
    Dt, V, F = TEXT["hidden_size"], TEXT["vocab_size"], TEXT["intermediate_size"]
    HD = Dt // TEXT["num_attention_heads"]
    Q, K = TEXT["num_attention_heads"] * HD, TEXT["num_key_value_heads"] * HD
    out += [("multi_modal_projector.linear_1.weight", (Dt, D)),
            ("multi_modal_projector.linear_1.bias", (Dt,)),
            ("multi_modal_projector.linear_2.weight", (Dt, Dt)),
            ("multi_modal_projector.linear_2.bias", (Dt,)),
            ("language_model.model.embed_tokens.weight", (V, Dt))]
    for li in range(TEXT["num_hidden_layers"]):
        pre = "language_model.model.layers.%d." % li
        out += [(pre + "input_layernorm.weight", (Dt,)), (pre + "self_attn.q_proj.weight", (Q, Dt)),
                (pre + "self_attn.k_proj.weight", (K, Dt)), (pre + "self_attn.v_proj.weight", (K, Dt)),
                (pre + "self_attn.o_proj.weight", (Dt, Q)),
                (pre + "post_attention_layernorm.weight", (Dt,)),
                (pre + "mlp.gate_proj.weight", (F, Dt)), (pre + "mlp.up_proj.weight", (F, Dt)),
                (pre + "mlp.down_proj.weight", (Dt, F))]
    out += [("language_model.model.norm.weight", (Dt,)), ("language_model.lm_head.weight", (V, Dt))]
    return out


def init_params(gen):
    """float32: N(0, 0.05) for matrices and embeddings, 1 + N(0, 0.1) for norm
    weights, N(0, 0.02) for biases (random, so their gradients are tested)."""
    params = {}
    for name, shape in layout():
        if name.endswith("norm.weight") or "layer_norm" in name and name.endswith(".weight") \
                or name.endswith("layernorm.weight") or name.endswith("layrnorm.weight"):
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith(".bias"):
            t = 0.02 * torch.randn(shape, generator=gen)
        else:
            t = 0.05 * torch.randn(shape, generator=gen)
        params[name] = t.to(torch.float32).contiguous()
    return params


def layernorm(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def vision_features(p, pixels):
    """pixels [3, S, S] -> projected features [N, Dt] (CLIP, layer -2, CLS dropped)."""
    D, H, P = VISION["hidden_size"], VISION["num_attention_heads"], VISION["patch_size"]
    HD, eps = D // H, VISION["layer_norm_eps"]
    w = p["vision_tower.embeddings.patch_embedding.weight"]  # [D, C, P, P]
    C, S = pixels.shape[0], pixels.shape[1]
    g = S // P
    # patches in row-major order, each flattened as (c, y, x): the conv as a product
    patches = pixels.reshape(C, g, P, g, P).permute(1, 3, 0, 2, 4).reshape(g * g, C * P * P)
    x = patches @ w.reshape(D, C * P * P).T  # [N, D]
    x = torch.cat([p["vision_tower.embeddings.class_embedding"][None, :], x], 0)
    x = x + p["vision_tower.embeddings.position_embedding.weight"]
    x = layernorm(x, p["vision_tower.pre_layrnorm.weight"], p["vision_tower.pre_layrnorm.bias"], eps)
    T = x.shape[0]
    # hidden state -2 = the output of layer L-1: the last layer never runs
    for li in range(VISION["num_hidden_layers"] - 1):
        pre = "vision_tower.encoder.layers.%d." % li
        h = layernorm(x, p[pre + "layer_norm1.weight"], p[pre + "layer_norm1.bias"], eps)
        q = h @ p[pre + "self_attn.q_proj.weight"].T + p[pre + "self_attn.q_proj.bias"]
        k = h @ p[pre + "self_attn.k_proj.weight"].T + p[pre + "self_attn.k_proj.bias"]
        v = h @ p[pre + "self_attn.v_proj.weight"].T + p[pre + "self_attn.v_proj.bias"]
        q, k, v = (t.view(T, H, HD).transpose(0, 1) for t in (q, k, v))
        a = torch.softmax((q @ k.transpose(-1, -2)) / math.sqrt(HD), dim=-1)  # no mask
        o = (a @ v).transpose(0, 1).reshape(T, D)
        x = x + o @ p[pre + "self_attn.out_proj.weight"].T + p[pre + "self_attn.out_proj.bias"]
        h2 = layernorm(x, p[pre + "layer_norm2.weight"], p[pre + "layer_norm2.bias"], eps)
        f = h2 @ p[pre + "mlp.fc1.weight"].T + p[pre + "mlp.fc1.bias"]
        f = f * torch.sigmoid(1.702 * f)  # quick_gelu
        x = x + f @ p[pre + "mlp.fc2.weight"].T + p[pre + "mlp.fc2.bias"]
    x = x[1:]  # "default": drop CLS
    y = x @ p["multi_modal_projector.linear_1.weight"].T + p["multi_modal_projector.linear_1.bias"]
    y = torch.nn.functional.gelu(y)  # erf
    return y @ p["multi_modal_projector.linear_2.weight"].T + p["multi_modal_projector.linear_2.bias"]


def text_forward(p, embeds):
    """embeds [T, Dt] -> logits [T, V]: the Llama decoder on given input rows."""
    D, H, KV = TEXT["hidden_size"], TEXT["num_attention_heads"], TEXT["num_key_value_heads"]
    HD, eps, T = D // H, TEXT["rms_norm_eps"], embeds.shape[0]
    cos, sin = rope_cos_sin(T, HD, TEXT["rope_theta"], embeds.dtype)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    x = embeds
    for li in range(TEXT["num_hidden_layers"]):
        pre = "language_model.model.layers.%d." % li
        h = rmsnorm(x, p[pre + "input_layernorm.weight"], eps)
        q = (h @ p[pre + "self_attn.q_proj.weight"].T).view(T, H, HD).transpose(0, 1)
        k = (h @ p[pre + "self_attn.k_proj.weight"].T).view(T, KV, HD).transpose(0, 1)
        v = (h @ p[pre + "self_attn.v_proj.weight"].T).view(T, KV, HD).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(H // KV, dim=0)
        v = v.repeat_interleave(H // KV, dim=0)
        s = ((q @ k.transpose(-1, -2)) / math.sqrt(HD)).masked_fill(~causal, float("-inf"))
        o = (torch.softmax(s, dim=-1) @ v).transpose(0, 1).reshape(T, H * HD)
        x = x + o @ p[pre + "self_attn.o_proj.weight"].T
        h2 = rmsnorm(x, p[pre + "post_attention_layernorm.weight"], eps)
        g = torch.nn.functional.silu(h2 @ p[pre + "mlp.gate_proj.weight"].T)
        x = x + (g * (h2 @ p[pre + "mlp.up_proj.weight"].T)) @ p[pre + "mlp.down_proj.weight"].T
    x = rmsnorm(x, p["language_model.model.norm.weight"], eps)
    return x @ p["language_model.lm_head.weight"].T


def forward(p, tokens, pixels):
    """tokens [T] with N image tokens, pixels [3, S, S] -> (logits [T, V], features [N, Dt])."""
    feats = vision_features(p, pixels)
    at = (tokens == IMAGE_TOKEN).nonzero().flatten()
    if at.numel() != feats.shape[0]:
        raise ValueError("%d image tokens for %d image rows" % (at.numel(), feats.shape[0]))
    embeds = p["language_model.model.embed_tokens.weight"][tokens].clone()
    embeds[at] = feats
    return text_forward(p, embeds), feats


# CLIPImageProcessor's normalisation (OPENAI_CLIP_MEAN / _STD), which a model
# directory without preprocessor_config.json gets
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def make_inputs(gen):
    """Token sequences, 8-bit RGB images [S, S, 3] and their pixel_values
    [3, S, S] as the processor makes them: pixel / 255, then (x - mean) / std."""
    N = (VISION["image_size"] // VISION["patch_size"]) ** 2
    S = VISION["image_size"]
    seqs, images, pixels = [], [], []
    mean = torch.tensor(CLIP_MEAN, dtype=torch.float64)[:, None, None]
    std = torch.tensor(CLIP_STD, dtype=torch.float64)[:, None, None]
    for s, text in enumerate(TEXTS):
        toks = [TEXT["bos_token_id"]] + [IMAGE_TOKEN] * N + list(text)
        seqs.append(torch.tensor(toks, dtype=torch.long))
        rgb = torch.randint(0, 256, (S, S, 3), generator=gen)
        images.append(rgb)
        x = rgb.permute(2, 0, 1).to(torch.float64) / 255.0
        pixels.append(((x - mean) / std).to(torch.float32))
    return seqs, images, pixels


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/llava_micro")
    ap.add_argument("--check", action="store_true",
                    help="compare with transformers' LlavaForConditionalGeneration")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    gen = torch.Generator().manual_seed(SEED)
    p32 = init_params(gen)
    seqs, images, pixels = make_inputs(gen)
    N = (VISION["image_size"] // VISION["patch_size"]) ** 2

    p = {k: v.to(torch.float64).requires_grad_(True) for k, v in p32.items()}
    J = torch.zeros((), dtype=torch.float64)
    ref = []
    for s, (toks, pix) in enumerate(zip(seqs, pixels)):
        logits, feats = forward(p, toks, pix.to(torch.float64))
        lp = torch.log_softmax(logits, dim=-1)
        T = toks.shape[0]
        logp = torch.zeros(T, dtype=torch.float64)  # logp[i]: log-prob of token i, i >= 1
        logp[1:] = lp[:-1].gather(1, toks[1:, None]).squeeze(1)
        # coefficients on the text after the image (image tokens are inputs only)
        coef = torch.zeros(T, dtype=torch.float64)
        first_text = 1 + N
        coef[first_text:] = torch.linspace(0.5, -1.0, T - first_text, dtype=torch.float64)
        J = J + (coef * logp).sum()
        ref += [("pixels.%d" % s, pix), ("rgb.%d" % s, images[s].to(torch.float32)),
                ("tokens.%d" % s, toks.to(torch.float32)),
                ("logits.%d" % s, logits.detach()), ("logp.%d" % s, logp.detach()),
                ("coef_logp.%d" % s, coef), ("features.%d" % s, feats.detach())]
    J.backward()
    names = [n for n, _ in layout()]
    unused = [n for n in names if p[n].grad is None]
    ref += [("grad." + n, p[n].grad if p[n].grad is not None else torch.zeros_like(p[n]))
            for n in names]

    config = dict(CONFIG)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(args.out, "model.safetensors"), [(n, p32[n]) for n in names])
    write_safetensors(os.path.join(args.out, "reference.safetensors"), ref)
    # tern's byte tokenizer (vocabulary 0..258; 259, the image token, is the model's)
    with open(os.path.join(args.out, "tokenizer.json"), "w") as f:
        json.dump({"tern_tokenizer": "bytes", "version": 1, "bos_token_id": 256,
                   "eos_token_id": 257, "pad_token_id": 258, "vocab_size": 259}, f, indent=2)
        f.write("\n")
    summary = {"seed": SEED, "J": J.item(), "image_rows": N,
               "sequence_lengths": [int(t.shape[0]) for t in seqs],
               "weights_without_gradient": unused}

    if args.check:
        summary["check"] = check_transformers(args.out, seqs, pixels, ref)
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    print(json.dumps(summary, indent=2))


def check_transformers(out, seqs, pixels, ref):
    """Load the written directory with transformers and compare the logits
    (float32 there against float64 here) and the gradients' directions."""
    import transformers
    from transformers import LlavaForConditionalGeneration

    m = LlavaForConditionalGeneration.from_pretrained(out, torch_dtype=torch.float32).eval()
    want = dict(ref)
    worst = 0.0
    J = 0
    for s, (toks, pix) in enumerate(zip(seqs, pixels)):
        o = m(input_ids=toks[None], pixel_values=pix[None].to(torch.float32))
        got = o.logits[0].to(torch.float64)
        worst = max(worst, (got - want["logits.%d" % s].to(torch.float64)).abs().max().item())
        lp = torch.log_softmax(got, dim=-1)
        logp = torch.zeros(toks.shape[0], dtype=torch.float64)
        logp[1:] = lp[:-1].gather(1, toks[1:, None]).squeeze(1)
        J = J + (want["coef_logp.%d" % s] * logp).sum()
    J.backward()
    # the in-memory names of 5.x: model.vision_tower.X, model.multi_modal_projector.X,
    # model.language_model.X, lm_head.weight
    grads = {}
    for n, prm in m.named_parameters():
        f = n.replace("model.vision_tower.", "vision_tower.") \
             .replace("model.multi_modal_projector.", "multi_modal_projector.") \
             .replace("model.language_model.", "language_model.model.") \
             .replace("lm_head.weight", "language_model.lm_head.weight") \
            if n != "lm_head.weight" else "language_model.lm_head.weight"
        grads[f] = prm.grad
    grad_err = 0.0
    for n, _ in layout():
        g = grads.get(n)
        w = want["grad." + n].to(torch.float64)
        if g is None:
            if w.abs().max().item() > 0:
                raise SystemExit("transformers has no gradient for %s" % n)
            continue
        # the keys' biases get exactly 0 (the softmax over keys ignores q·b): float32
        # leaves about 1e-10 there, so differences count against at least 1e-6
        scale = max(w.abs().max().item(), 1e-6)
        e = (g.to(torch.float64) - w).abs().max().item() / scale
        if e > 1e-3:
            print("  %s: gradient max %.3g here, %.3g in transformers" % (n, w.abs().max().item(),
                                                                        g.abs().max().item()))
        grad_err = max(grad_err, e)
    print("transformers %s: max |logits diff| %.3g, max relative gradient diff %.3g"
          % (transformers.__version__, worst, grad_err))
    if worst > 1e-4 or grad_err > 1e-3:
        raise SystemExit("the reference disagrees with transformers")
    return {"transformers": transformers.__version__, "max_logit_diff": worst,
            "max_rel_grad_diff": grad_err}


if __name__ == "__main__":
    main()
