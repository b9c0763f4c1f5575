#!/usr/bin/python3
"""hf_models_ref.py: PyTorch references for tern's Hugging Face architectures.

Builds three tiny models with fixed random weights and runs them exactly as
Hugging Face's classes do (written out in plain torch; `transformers` is not
needed), in HF tensor naming and layout, and writes committed fixtures:

  qwen2_micro/   Qwen2ForCausalLM: q/k/v biases, untied lm_head, rope_theta 1e6;
                 weights F32, SHARDED (model.safetensors.index.json + 2 shards)
  llama3_micro/  LlamaForCausalLM with Llama 3 RoPE scaling, attention_bias and
                 mlp_bias true, tied embeddings; weights stored as BF16
  gpt2_micro/    GPT2LMHeadModel: LayerNorm, learned positions, gelu_new,
                 Conv1D weights [in, out], c_attn fused q/k/v; names WITHOUT the
                 "transformer." prefix (as the original gpt2 files), plus the
                 attn.bias / attn.masked_bias buffers old files carry

Each directory: config.json, tokenizer.json (tern's byte tokenizer), the
weights, and reference.safetensors (F32): tokens.s, logits.s, logp.s,
entropy.s, coef_logp.s, coef_entropy.s for sequences s = 0, 1; grad.<name>
(dJ/dθ, J = sum_s sum_i coef_logp[i] logp[i] + coef_entropy[i] entropy[i])
for every parameter under the name tern saves it with; greedy.prompt,
greedy.tokens, greedy.logp. All computed in float64 from the weights AS
STORED (bf16-rounded for llama3_micro).

Usage (CI never runs this; the outputs are committed):
  /usr/bin/python3 tests/ref/hf_models_ref.py --out tests/fixtures
Dependencies: Python 3, torch, numpy. Deterministic for a given torch build.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

SEED = 20250301
SEQ_LENS = [6, 9]
PROMPT_LEN = 4
GREEDY_NEW = 6
SPECIAL = {"bos_token_id": 256, "eos_token_id": 257, "pad_token_id": 258}


def fail(msg):
    print("hf_models_ref.py: CHECK FAILED: " + msg, file=sys.stderr)
    sys.exit(1)


# --------------------------------------------------------------------------
# Configs
# --------------------------------------------------------------------------

QWEN2 = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
    "attention_dropout": 0.0, "hidden_act": "silu", "hidden_size": 16,
    "initializer_range": 0.02, "intermediate_size": 32, "max_position_embeddings": 64,
    "max_window_layers": 2, "num_attention_heads": 2, "num_hidden_layers": 2,
    "num_key_value_heads": 1, "rms_norm_eps": 1e-6, "rope_scaling": None,
    "rope_theta": 1000000.0, "sliding_window": 64, "tie_word_embeddings": False,
    "torch_dtype": "float32", "use_cache": True, "use_sliding_window": False,
    "vocab_size": 259, **SPECIAL,
}

LLAMA3 = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "attention_bias": True, "attention_dropout": 0.0, "head_dim": 8, "hidden_act": "silu",
    "hidden_size": 16, "initializer_range": 0.02, "intermediate_size": 32,
    "max_position_embeddings": 1024, "mlp_bias": True, "num_attention_heads": 2,
    "num_hidden_layers": 2, "num_key_value_heads": 1, "pretraining_tp": 1,
    "rms_norm_eps": 1e-5,
    # wavelengths 2π/inv_freq of the 4 frequencies: 6.3 (< 512/4: kept),
    # 167 (between: smoothed), 4443 and 118000 (> 512/1: divided by 8)
    "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 512, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "use_cache": True, "vocab_size": 259, **SPECIAL,
}

GPT2 = {
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
    "activation_function": "gelu_new", "attn_pdrop": 0.1, "embd_pdrop": 0.1,
    "initializer_range": 0.02, "layer_norm_epsilon": 1e-5, "n_ctx": 32, "n_embd": 16,
    "n_head": 2, "n_inner": None, "n_layer": 2, "n_positions": 32,
    "reorder_and_upcast_attn": False, "resid_pdrop": 0.1,
    "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
    "summary_activation": None, "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
    "summary_type": "cls_index", "summary_use_proj": True, "torch_dtype": "float32",
    "use_cache": True, "vocab_size": 259, **SPECIAL,
}


# --------------------------------------------------------------------------
# Layouts: [(name, shape, kind)] in tern's order (llama_layout.c), with the
# names tern saves (GPT-2: GPT2LMHeadModel's "transformer." names).
# kind: "matrix", "norm" (starts near 1), "bias", "embed", "pos"
# --------------------------------------------------------------------------

def llama_like_layout(c, qkv_bias, o_bias, mlp_bias):
    V, D, F = c["vocab_size"], c["hidden_size"], c["intermediate_size"]
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    HD = D // H
    Q, K = H * HD, KV * HD
    out = [("model.embed_tokens.weight", (V, D), "embed")]
    for li in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % li
        out.append((p + "input_layernorm.weight", (D,), "norm"))
        for proj, rows in (("q", Q), ("k", K), ("v", K)):
            out.append((p + "self_attn.%s_proj.weight" % proj, (rows, D), "matrix"))
            if qkv_bias:
                out.append((p + "self_attn.%s_proj.bias" % proj, (rows,), "bias"))
        out.append((p + "self_attn.o_proj.weight", (D, Q), "matrix"))
        if o_bias:
            out.append((p + "self_attn.o_proj.bias", (D,), "bias"))
        out.append((p + "post_attention_layernorm.weight", (D,), "norm"))
        for proj, shape in (("gate", (F, D)), ("up", (F, D)), ("down", (D, F))):
            out.append((p + "mlp.%s_proj.weight" % proj, shape, "matrix"))
            if mlp_bias:
                out.append((p + "mlp.%s_proj.bias" % proj, (shape[0],), "bias"))
    out.append(("model.norm.weight", (D,), "norm"))
    if not c["tie_word_embeddings"]:
        out.append(("lm_head.weight", (V, D), "matrix"))
    return out


def gpt2_layout(c):
    V, D, P = c["vocab_size"], c["n_embd"], c["n_positions"]
    F = c["n_inner"] or 4 * D
    out = [("transformer.wte.weight", (V, D), "embed"), ("transformer.wpe.weight", (P, D), "pos")]
    for li in range(c["n_layer"]):
        p = "transformer.h.%d." % li
        # Conv1D weights are [in, out]
        out += [(p + "ln_1.weight", (D,), "norm"), (p + "ln_1.bias", (D,), "bias"),
                (p + "attn.c_attn.weight", (D, 3 * D), "matrix"),
                (p + "attn.c_attn.bias", (3 * D,), "bias"),
                (p + "attn.c_proj.weight", (D, D), "matrix"),
                (p + "attn.c_proj.bias", (D,), "bias"),
                (p + "ln_2.weight", (D,), "norm"), (p + "ln_2.bias", (D,), "bias"),
                (p + "mlp.c_fc.weight", (D, F), "matrix"), (p + "mlp.c_fc.bias", (F,), "bias"),
                (p + "mlp.c_proj.weight", (F, D), "matrix"), (p + "mlp.c_proj.bias", (D,), "bias")]
    out += [("transformer.ln_f.weight", (D,), "norm"), ("transformer.ln_f.bias", (D,), "bias")]
    return out


def init_params(layout, gen):
    """float32 weights large enough that every path matters: embeddings
    N(0, 1), matrices N(0, 0.6 / sqrt(fan_in)), norm weights 1 + N(0, 0.1),
    biases N(0, 0.2) (nonzero, so dropping one changes the logits),
    positions N(0, 0.5)."""
    params = {}
    for name, shape, kind in layout:
        r = torch.randn(shape, generator=gen, dtype=torch.float32)
        if kind == "embed":
            t = r
        elif kind == "pos":
            t = 0.5 * r
        elif kind == "norm":
            t = 1.0 + 0.1 * r
        elif kind == "bias":
            t = 0.2 * r
        else:
            # fan_in: Linear [out, in] -> shape[1]; Conv1D [in, out] -> shape[0]
            fan_in = shape[0] if name.startswith("transformer.") else shape[1]
            t = (0.6 / math.sqrt(fan_in)) * r
        params[name] = t.contiguous()
    return params


# --------------------------------------------------------------------------
# safetensors I/O, by hand (8-byte LE header length, JSON header padded with
# spaces to a multiple of 8, raw little-endian data)
# --------------------------------------------------------------------------

def tensor_bytes(t, dtype):
    if dtype == "F32":
        return np.ascontiguousarray(t.detach().to(torch.float32).numpy(), dtype="<f4").tobytes()
    if dtype == "BF16":
        bits = t.detach().to(torch.bfloat16).view(torch.int16).numpy().astype("<i2")
        return np.ascontiguousarray(bits).tobytes()
    if dtype == "U8":
        return np.ascontiguousarray(t.detach().numpy().astype(np.uint8)).tobytes()
    fail("dtype " + dtype)


def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, tensor, dtype), in file order."""
    header, blobs, off = {}, [], 0
    for name, t, dtype in tensors:
        b = tensor_bytes(t, dtype)
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = dict(metadata or {"format": "pt"})
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    return off


def read_safetensors(path):
    """{name: float64 tensor} of the F32/BF16 tensors (others skipped)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    header.pop("__metadata__", None)
    out = {}
    for k, e in header.items():
        b, end = e["data_offsets"]
        if e["dtype"] == "F32":
            a = np.frombuffer(data[b:end], dtype="<f4").astype(np.float64)
        elif e["dtype"] == "BF16":
            bits = np.frombuffer(data[b:end], dtype="<u2").astype(np.uint32) << 16
            a = bits.view(np.float32).astype(np.float64)
        else:
            continue
        out[k] = torch.from_numpy(a.reshape(e["shape"]).copy())
    return out


# --------------------------------------------------------------------------
# The models, as HF computes them (eager attention, no dropout, no cache)
# --------------------------------------------------------------------------

def rmsnorm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def layernorm(x, w, b, eps):
    mu = x.mean(-1, keepdim=True)
    var = (x - mu).pow(2).mean(-1, keepdim=True)  # biased, as torch.nn.LayerNorm
    return (x - mu) * torch.rsqrt(var + eps) * w + b


def gelu_new(x):
    # transformers' NewGELUActivation
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def inv_freq_of(c, HD):
    """RoPE inverse frequencies; Llama 3 scaling as transformers'
    _compute_llama3_parameters (here in float64)."""
    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, HD, 2, dtype=torch.float64) / HD))
    rs = c.get("rope_scaling")
    if not rs:
        return inv
    assert rs["rope_type"] == "llama3"
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv
    inv_l = torch.where(wavelen > low_wavelen, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
    is_medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(is_medium, smoothed, inv_l)


def causal_attention(q, k, v, HD):
    """q [H, T, HD], k, v [H, T, HD] (kv already repeated)."""
    T = q.shape[1]
    s = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def llama_like_forward(p, c, toks, qkv_bias, o_bias, mlp_bias):
    """toks [T] long -> logits [T, V]. Llama (biases as configured) and Qwen2
    (qkv_bias only)."""
    D = c["hidden_size"]
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    HD = D // H
    eps = c["rms_norm_eps"]
    T = toks.shape[0]
    dtype = p["model.embed_tokens.weight"].dtype

    def lin(x, name, bias):
        y = x @ p[name + ".weight"].T
        return y + p[name + ".bias"] if bias else y

    inv = inv_freq_of(c, HD)
    ang = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    x = p["model.embed_tokens.weight"][toks]
    for li in range(c["num_hidden_layers"]):
        pre = "model.layers.%d." % li
        h = rmsnorm(x, p[pre + "input_layernorm.weight"], eps)
        q = lin(h, pre + "self_attn.q_proj", qkv_bias).view(T, H, HD).transpose(0, 1)
        k = lin(h, pre + "self_attn.k_proj", qkv_bias).view(T, KV, HD).transpose(0, 1)
        v = lin(h, pre + "self_attn.v_proj", qkv_bias).view(T, KV, HD).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(H // KV, dim=0)
        v = v.repeat_interleave(H // KV, dim=0)
        o = causal_attention(q, k, v, HD).transpose(0, 1).reshape(T, H * HD)
        x = x + lin(o, pre + "self_attn.o_proj", o_bias)
        h2 = rmsnorm(x, p[pre + "post_attention_layernorm.weight"], eps)
        g = torch.nn.functional.silu(lin(h2, pre + "mlp.gate_proj", mlp_bias))
        u = lin(h2, pre + "mlp.up_proj", mlp_bias)
        x = x + lin(g * u, pre + "mlp.down_proj", mlp_bias)
    x = rmsnorm(x, p["model.norm.weight"], eps)
    lm = p["model.embed_tokens.weight"] if c["tie_word_embeddings"] else p["lm_head.weight"]
    return x @ lm.T


def gpt2_forward(p, c, toks):
    """GPT2LMHeadModel: toks [T] -> logits [T, V]."""
    D, H = c["n_embd"], c["n_head"]
    HD = D // H
    eps = c["layer_norm_epsilon"]
    T = toks.shape[0]

    def conv1d(x, name):  # transformers.pytorch_utils.Conv1D: x W + b, W [in, out]
        return x @ p[name + ".weight"] + p[name + ".bias"]

    x = p["transformer.wte.weight"][toks] + p["transformer.wpe.weight"][torch.arange(T)]
    for li in range(c["n_layer"]):
        pre = "transformer.h.%d." % li
        h = layernorm(x, p[pre + "ln_1.weight"], p[pre + "ln_1.bias"], eps)
        q, k, v = conv1d(h, pre + "attn.c_attn").split(D, dim=-1)
        q, k, v = (t.view(T, H, HD).transpose(0, 1) for t in (q, k, v))
        o = causal_attention(q, k, v, HD).transpose(0, 1).reshape(T, D)
        x = x + conv1d(o, pre + "attn.c_proj")
        h2 = layernorm(x, p[pre + "ln_2.weight"], p[pre + "ln_2.bias"], eps)
        x = x + conv1d(gelu_new(conv1d(h2, pre + "mlp.c_fc")), pre + "mlp.c_proj")
    x = layernorm(x, p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], eps)
    lm = p["transformer.wte.weight"] if c.get("tie_word_embeddings", True) else p["lm_head.weight"]
    return x @ lm.T


def seq_stats(logits, toks):
    """tern's conventions: logp[i], entropy[i] from logits[i-1] for i >= 1; 0 at i = 0."""
    lsm = torch.log_softmax(logits[:-1], dim=-1)
    lp = lsm.gather(1, toks[1:].unsqueeze(1)).squeeze(1)
    ent = -(lsm.exp() * lsm).sum(-1)
    z = torch.zeros(1, dtype=logits.dtype)
    return torch.cat((z, lp)), torch.cat((z, ent))


def objective(fwd, p, seqs, coef_a, coef_b):
    J = torch.zeros((), dtype=torch.float64)
    outs = []
    for toks, a, b in zip(seqs, coef_a, coef_b):
        logits = fwd(p, toks)
        lp, ent = seq_stats(logits, toks)
        J = J + (a * lp).sum() + (b * ent).sum()
        outs.append((logits, lp, ent))
    return J, outs


def greedy(fwd, p, prompt, n_new):
    ids, out_ids, out_lp, margins = list(prompt), [], [], []
    for _ in range(n_new):
        logits = fwd(p, torch.tensor(ids))[-1]
        t = int(torch.nonzero(logits == logits.max())[0, 0])  # ties: lowest id
        top2 = torch.topk(logits, 2).values
        margins.append(float(top2[0] - top2[1]))
        out_ids.append(t)
        out_lp.append(float(torch.log_softmax(logits, -1)[t]))
        ids.append(t)
    return out_ids, out_lp, min(margins)


# --------------------------------------------------------------------------

def make_fixture(out_dir, name, cfg, layout, fwd, storage, gen):
    """storage: "f32", "bf16", "sharded" or "gpt2_unprefixed"."""
    p32 = init_params(layout, gen)
    names = [n for n, _, _ in layout]
    # the reference runs on the weights as stored
    if storage == "bf16":
        stored = {n: t.to(torch.bfloat16).to(torch.float64) for n, t in p32.items()}
    else:
        stored = {n: t.to(torch.float64) for n, t in p32.items()}

    seqs, coef_a, coef_b = [], [], []
    for n in SEQ_LENS:
        toks = torch.randint(0, 256, (n,), generator=gen)
        toks[0] = SPECIAL["bos_token_id"]
        seqs.append(toks)
        a = torch.randn(n, generator=gen, dtype=torch.float32).to(torch.float64)
        b = torch.randn(n, generator=gen, dtype=torch.float32).to(torch.float64)
        a[0] = b[0] = 0.0
        coef_a.append(a)
        coef_b.append(b)

    p64 = {k: v.clone().requires_grad_(True) for k, v in stored.items()}
    J, outs = objective(fwd, p64, seqs, coef_a, coef_b)
    grads = dict(zip(names, torch.autograd.grad(J, [p64[n] for n in names])))
    p64 = {k: v.detach() for k, v in p64.items()}
    outs = [(l.detach(), lp.detach(), e.detach()) for l, lp, e in outs]

    # check: autograd against central differences on one entry of each bias
    # and norm (the new tensors), float64
    def J_of(pp):
        with torch.no_grad():
            return float(objective(fwd, pp, seqs, coef_a, coef_b)[0])
    worst, h = 0.0, 1e-4
    for n, _, kind in layout:
        if kind not in ("bias", "norm", "pos"):
            continue
        idx = int(grads[n].reshape(-1).abs().argmax())
        pp = {k: v.clone() for k, v in p64.items()}
        flat = pp[n].view(-1)
        x0 = float(flat[idx])
        flat[idx] = x0 + h
        jp = J_of(pp)
        flat[idx] = x0 - h
        jm = J_of(pp)
        fd, ad = (jp - jm) / (2 * h), float(grads[n].reshape(-1)[idx])
        worst = max(worst, abs(fd - ad) / max(abs(ad), abs(fd), 1e-12))
    if worst > 1e-5:
        fail("%s: finite-difference relative error %.3g" % (name, worst))

    # float32 noise of the same model, and greedy decoding
    p32s = {k: v.to(torch.float32) for k, v in p64.items()}
    with torch.no_grad():
        _, outs32 = objective(lambda pp, t: fwd(pp, t).double(), p32s, seqs, coef_a, coef_b)
        noise = max(float((o32[0] - o64[0]).abs().max()) for o32, o64 in zip(outs32, outs))
        prompt = [int(t) for t in seqs[0][:PROMPT_LEN]]
        g_ids, g_lp, g_margin = greedy(fwd, p64, prompt, GREEDY_NEW)
        g32_ids, _, _ = greedy(fwd, p32s, prompt, GREEDY_NEW)
    if g_ids != g32_ids:
        fail("%s: float32 and float64 greedy decodes differ" % name)

    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    tok = {"tern_tokenizer": "bytes", "version": 1, "vocab_size": 259, **SPECIAL}
    with open(os.path.join(d, "tokenizer.json"), "w") as f:
        json.dump(tok, f, indent=2)
        f.write("\n")

    if storage == "sharded":
        half = len(names) // 2
        shards = [names[:half], names[half:]]
        weight_map, total = {}, 0
        for i, part in enumerate(shards):
            fname = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
            total += write_safetensors(os.path.join(d, fname), [(n, p32[n], "F32") for n in part])
            for n in part:
                weight_map[n] = fname
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2,
                      sort_keys=True)
            f.write("\n")
    elif storage == "bf16":
        write_safetensors(os.path.join(d, "model.safetensors"), [(n, p32[n], "BF16") for n in names])
    elif storage == "gpt2_unprefixed":
        P = cfg["n_positions"]
        items = [(n[len("transformer."):], p32[n], "F32") for n in names]
        for li in range(cfg["n_layer"]):
            # the causal-mask buffers of older GPT-2 files: not parameters
            items.append(("h.%d.attn.bias" % li, torch.ones(P, P, dtype=torch.uint8).tril().view(1, 1, P, P), "U8"))
            items.append(("h.%d.attn.masked_bias" % li, torch.tensor(-1e4), "F32"))
        write_safetensors(os.path.join(d, "model.safetensors"), items)
    else:
        write_safetensors(os.path.join(d, "model.safetensors"), [(n, p32[n], "F32") for n in names])

    # read back what was written: the reference's weights must be the stored ones
    back = {}
    for f in sorted(os.listdir(d)):
        if f.endswith(".safetensors"):
            back.update(read_safetensors(os.path.join(d, f)))
    for n in names:
        key = n if n in back else n[len("transformer."):]
        if not torch.equal(back[key], p64[n]):
            fail("%s: %s read back differs from the reference's weights" % (name, n))

    ref = []
    for s, toks in enumerate(seqs):
        logits, lp, ent = outs[s]
        ref += [("tokens.%d" % s, toks.to(torch.float32)), ("logits.%d" % s, logits),
                ("logp.%d" % s, lp), ("entropy.%d" % s, ent),
                ("coef_logp.%d" % s, coef_a[s]), ("coef_entropy.%d" % s, coef_b[s])]
    ref += [("greedy.prompt", torch.tensor(prompt, dtype=torch.float32)),
            ("greedy.tokens", torch.tensor(g_ids, dtype=torch.float32)),
            ("greedy.logp", torch.tensor(g_lp, dtype=torch.float64))]
    ref += [("grad." + n, grads[n]) for n in names]
    write_safetensors(os.path.join(d, "reference.safetensors"), [(n, t, "F32") for n, t in ref],
                      {"format": "pt", "generator": "tests/ref/hf_models_ref.py",
                       "torch": torch.__version__, "seed": str(SEED), "J": repr(float(J)),
                       "float32_logit_noise": "%.3g" % noise,
                       "greedy_min_margin": "%.3g" % g_margin})
    size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
    print("%-13s %5d params  J = %.12g  f32 noise %.2g  fd err %.2g  greedy %s (margin %.3g)  %d bytes"
          % (name, sum(int(np.prod(s)) for _, s, _ in layout), float(J), noise, worst, g_ids,
             g_margin, size))
    if size > 200 * 1024:
        fail("%s is %d bytes; keep fixtures under 200 KB" % (d, size))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="the fixtures directory (tests/fixtures)")
    args = ap.parse_args()
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)

    make_fixture(args.out, "qwen2_micro", QWEN2, llama_like_layout(QWEN2, True, False, False),
                 lambda p, t: llama_like_forward(p, QWEN2, t, True, False, False), "sharded", gen)
    make_fixture(args.out, "llama3_micro", LLAMA3, llama_like_layout(LLAMA3, True, True, True),
                 lambda p, t: llama_like_forward(p, LLAMA3, t, True, True, True), "bf16", gen)
    make_fixture(args.out, "gpt2_micro", GPT2, gpt2_layout(GPT2),
                 lambda p, t: gpt2_forward(p, GPT2, t), "gpt2_unprefixed", gen)


if __name__ == "__main__":
    main()
