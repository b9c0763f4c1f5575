#!/usr/bin/python3
"""llama_ref.py: PyTorch reference for the parity tests of tern's CPU Llama.

Builds a tiny Llama ("micro" config) with fixed random weights, runs it
exactly as Hugging Face's LlamaForCausalLM does (implemented here in plain
torch; `transformers` is not needed), and writes committed fixtures:

  config.json            HF Llama config
  model.safetensors      the weights (F32, HF names, tern's layout order)
  reference.safetensors  inputs, logits, logp, entropy, objective
                         coefficients, gradients, greedy decode (all F32)
  reference.json         summary: sizes, J, noise figures, checks, seed

Usage (CI never runs this; the outputs are committed):
  /usr/bin/python3 tests/ref/llama_ref.py --out tests/fixtures/llama_micro

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

SEED = 20240607

CONFIG = {
    "vocab_size": 259,  # bytes 0..255, BOS 256, EOS 257, PAD 258
    "hidden_size": 32,
    "intermediate_size": 80,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "bos_token_id": 256,
    "eos_token_id": 257,
    "pad_token_id": 258,
}

SEQ_LENS = [7, 12, 5]
PROMPT_LEN = 4
GREEDY_NEW = 8

LAYER_NAMES = [
    "input_layernorm.weight",
    "self_attn.q_proj.weight",
    "self_attn.k_proj.weight",
    "self_attn.v_proj.weight",
    "self_attn.o_proj.weight",
    "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",
    "mlp.up_proj.weight",
    "mlp.down_proj.weight",
]


def fail(msg):
    print("llama_ref.py: CHECK FAILED: " + msg, file=sys.stderr)
    sys.exit(1)


# --------------------------------------------------------------------------
# Layout (mirrors plugins/models/transformer/decoder/llama_layout.c)
# --------------------------------------------------------------------------

def param_layout(c):
    """[(name, shape)] in tern's flat-array order."""
    V, D, F = c["vocab_size"], c["hidden_size"], c["intermediate_size"]
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    HD = D // H
    Q, K = H * HD, KV * HD
    shapes = [(D,), (Q, D), (K, D), (K, D), (D, Q), (D,), (F, D), (F, D), (D, F)]
    out = [("model.embed_tokens.weight", (V, D))]
    for li in range(c["num_hidden_layers"]):
        for n, s in zip(LAYER_NAMES, shapes):
            out.append(("model.layers.%d.%s" % (li, n), s))
    out.append(("model.norm.weight", (D,)))
    if not c["tie_word_embeddings"]:
        out.append(("lm_head.weight", (V, D)))
    return out


def init_params(c, gen):
    """float32 weights: N(0, 0.02) for matrices, 1 + N(0, 0.1) for norms."""
    params = {}
    for name, shape in param_layout(c):
        if len(shape) == 1:
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen, dtype=torch.float32)
        else:
            t = 0.02 * torch.randn(shape, generator=gen, dtype=torch.float32)
        params[name] = t.contiguous()
    return params


# --------------------------------------------------------------------------
# safetensors I/O (written by hand: 8-byte LE header length, JSON header
# padded with spaces to a multiple of 8, then raw little-endian data)
# --------------------------------------------------------------------------

def write_safetensors(path, tensors, metadata=None):
    """tensors: list of (name, tensor); all stored as F32 in list order."""
    header = {}
    blobs = []
    off = 0
    for name, t in tensors:
        a = np.ascontiguousarray(t.detach().to(torch.float32).cpu().numpy(), dtype="<f4")
        b = a.tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
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


def read_safetensors(path):
    """Returns (ordered list of names, {name: float32 tensor}, metadata)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    meta = header.pop("__metadata__", None)
    names = sorted(header, key=lambda k: header[k]["data_offsets"][0])
    out = {}
    expect = 0
    for k in names:
        e = header[k]
        if e["dtype"] != "F32":
            fail("%s: unexpected dtype %s" % (k, e["dtype"]))
        b, end = e["data_offsets"]
        if b != expect:
            fail("%s: data not contiguous" % k)
        expect = end
        numel = int(np.prod(e["shape"])) if e["shape"] else 1
        if end - b != 4 * numel:
            fail("%s: size mismatch" % k)
        a = np.frombuffer(data[b:end], dtype="<f4").reshape(e["shape"]).copy()
        out[k] = torch.from_numpy(a)
    if expect != len(data):
        fail("trailing bytes in %s" % path)
    return names, out, meta


# --------------------------------------------------------------------------
# The model, as HF LlamaForCausalLM (eager attention, no bias, silu MLP)
# --------------------------------------------------------------------------

def rmsnorm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_cos_sin(T, HD, theta, dtype):
    # inv_freq[i] = theta^(-2i/HD), i < HD/2; computed in float64 then cast.
    inv_freq = 1.0 / (theta ** (torch.arange(0, HD, 2, dtype=torch.float64) / HD))
    pos = torch.arange(T, dtype=torch.float64)
    ang = torch.outer(pos, inv_freq)
    emb = torch.cat((ang, ang), dim=-1)  # [T, HD]
    return emb.cos().to(dtype), emb.sin().to(dtype)


def forward(p, c, tokens, lengths=None):
    """tokens: [B, T] long. lengths: optional [B] valid lengths (right padded).
    Returns logits [B, T, V] in the dtype of p."""
    D = c["hidden_size"]
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    HD = D // H
    rep = H // KV
    eps = c["rms_norm_eps"]
    B, T = tokens.shape
    dtype = p["model.embed_tokens.weight"].dtype

    x = p["model.embed_tokens.weight"][tokens]  # [B, T, D]
    cos, sin = rope_cos_sin(T, HD, c["rope_theta"], dtype)

    causal = torch.ones(T, T, dtype=torch.bool).tril()  # [Tq, Tk]
    allowed = causal.unsqueeze(0).expand(B, T, T)
    if lengths is not None:
        keyvalid = torch.arange(T).unsqueeze(0) < torch.as_tensor(lengths).unsqueeze(1)  # [B, Tk]
        allowed = allowed & keyvalid.unsqueeze(1)
    allowed = allowed.unsqueeze(1)  # [B, 1, Tq, Tk]

    for li in range(c["num_hidden_layers"]):
        pre = "model.layers.%d." % li
        h = rmsnorm(x, p[pre + "input_layernorm.weight"], eps)
        q = h @ p[pre + "self_attn.q_proj.weight"].T
        k = h @ p[pre + "self_attn.k_proj.weight"].T
        v = h @ p[pre + "self_attn.v_proj.weight"].T
        q = q.view(B, T, H, HD).transpose(1, 2)  # [B, H, T, HD]
        k = k.view(B, T, KV, HD).transpose(1, 2)  # [B, KV, T, HD]
        v = v.view(B, T, KV, HD).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # repeat_kv: kv head j serves query heads j*rep .. (j+1)*rep-1
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(HD)
        s = s.masked_fill(~allowed, float("-inf"))
        a = torch.softmax(s, dim=-1)
        o = (a @ v).transpose(1, 2).reshape(B, T, H * HD)
        x = x + o @ p[pre + "self_attn.o_proj.weight"].T
        h2 = rmsnorm(x, p[pre + "post_attention_layernorm.weight"], eps)
        g = torch.nn.functional.silu(h2 @ p[pre + "mlp.gate_proj.weight"].T)
        u = h2 @ p[pre + "mlp.up_proj.weight"].T
        x = x + (g * u) @ p[pre + "mlp.down_proj.weight"].T
    x = rmsnorm(x, p["model.norm.weight"], eps)
    lm = p["model.embed_tokens.weight"] if c["tie_word_embeddings"] else p["lm_head.weight"]
    return x @ lm.T


def seq_stats(logits, toks):
    """tern's conventions for one sequence: logp[i], entropy[i] from
    logits[i-1] for i >= 1; index 0 is 0. logits [T, V], toks [T]."""
    T = toks.shape[0]
    lsm = torch.log_softmax(logits[:-1], dim=-1)  # [T-1, V]
    lp = lsm.gather(1, toks[1:].unsqueeze(1)).squeeze(1)
    ent = -(lsm.exp() * lsm).sum(-1)
    z = torch.zeros(1, dtype=logits.dtype)
    return torch.cat((z, lp)), torch.cat((z, ent))


def objective(p, c, seqs, coef_a, coef_b):
    J = torch.zeros((), dtype=p["model.embed_tokens.weight"].dtype)
    outs = []
    for toks, a, b in zip(seqs, coef_a, coef_b):
        logits = forward(p, c, toks.unsqueeze(0))[0]
        lp, ent = seq_stats(logits, toks)
        J = J + (a * lp).sum() + (b * ent).sum()
        outs.append((logits, lp, ent))
    return J, outs


def naive_forward(p, c, toks):
    """Independent, loop-based float64 numpy implementation of the same
    model (one token, one head at a time, as a C implementation would do it),
    used only to cross-check `forward`. toks: list of ids. Returns [T, V]."""
    D = c["hidden_size"]
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    HD = D // H
    half = HD // 2
    eps = c["rms_norm_eps"]
    W = {k: v.detach().double().numpy() for k, v in p.items()}

    def norm(x, w):
        return w * x / math.sqrt(float(np.dot(x, x)) / D + eps)

    def rope(vec, pos):
        out = np.empty(HD)
        for i in range(half):
            ang = pos * c["rope_theta"] ** (-2.0 * i / HD)
            x1, x2 = vec[i], vec[i + half]
            out[i] = x1 * math.cos(ang) - x2 * math.sin(ang)
            out[i + half] = x2 * math.cos(ang) + x1 * math.sin(ang)
        return out

    T = len(toks)
    xs = [W["model.embed_tokens.weight"][t].copy() for t in toks]
    for li in range(c["num_hidden_layers"]):
        pre = "model.layers.%d." % li
        ks, vs, qs = [], [], []
        for t in range(T):
            h = norm(xs[t], W[pre + "input_layernorm.weight"])
            q = W[pre + "self_attn.q_proj.weight"] @ h
            k = W[pre + "self_attn.k_proj.weight"] @ h
            v = W[pre + "self_attn.v_proj.weight"] @ h
            qs.append([rope(q[hh * HD:(hh + 1) * HD], t) for hh in range(H)])
            ks.append([rope(k[j * HD:(j + 1) * HD], t) for j in range(KV)])
            vs.append([v[j * HD:(j + 1) * HD] for j in range(KV)])
        for t in range(T):
            o = np.zeros(H * HD)
            for hh in range(H):
                j = hh // (H // KV)
                sc = np.array([np.dot(qs[t][hh], ks[u][j]) / math.sqrt(HD) for u in range(t + 1)])
                sc = np.exp(sc - sc.max())
                sc /= sc.sum()
                o[hh * HD:(hh + 1) * HD] = sum(sc[u] * vs[u][j] for u in range(t + 1))
            xs[t] = xs[t] + W[pre + "self_attn.o_proj.weight"] @ o
        for t in range(T):
            h2 = norm(xs[t], W[pre + "post_attention_layernorm.weight"])
            g = W[pre + "mlp.gate_proj.weight"] @ h2
            g = g / (1.0 + np.exp(-g))
            u = W[pre + "mlp.up_proj.weight"] @ h2
            xs[t] = xs[t] + W[pre + "mlp.down_proj.weight"] @ (g * u)
    lm = W["model.embed_tokens.weight"] if c["tie_word_embeddings"] else W["lm_head.weight"]
    return np.stack([lm @ norm(x, W["model.norm.weight"]) for x in xs])


def argmax_lowest(v):
    m = v.max()
    return int(torch.nonzero(v == m)[0, 0])


def greedy(p, c, prompt, n_new):
    """Greedy decode (ties -> lowest id), full recompute each step.
    Returns new ids, their log-probs (temperature 1) and the smallest
    top-1/top-2 logit margin met."""
    ids = list(prompt)
    out_ids, out_lp, margins = [], [], []
    for _ in range(n_new):
        logits = forward(p, c, torch.tensor([ids]))[0, -1]
        t = argmax_lowest(logits)
        top2 = torch.topk(logits, 2).values
        margins.append(float(top2[0] - top2[1]))
        out_ids.append(t)
        out_lp.append(float(torch.log_softmax(logits, -1)[t]))
        ids.append(t)
    return out_ids, out_lp, min(margins)


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output directory")
    args = ap.parse_args()

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    c = CONFIG
    gen = torch.Generator().manual_seed(SEED)

    # --- weights (float32) and the float64 copy used for the reference
    p32 = init_params(c, gen)
    p64 = {k: v.to(torch.float64) for k, v in p32.items()}

    # --- inputs: BOS then random byte ids (0..255)
    seqs = []
    for n in SEQ_LENS:
        rest = torch.randint(0, 256, (n - 1,), generator=gen)
        seqs.append(torch.cat((torch.tensor([c["bos_token_id"]]), rest)).long())
    coef_a, coef_b = [], []
    for n in SEQ_LENS:
        a = torch.randn(n, generator=gen, dtype=torch.float32).to(torch.float64)
        b = torch.randn(n, generator=gen, dtype=torch.float32).to(torch.float64)
        a[0] = 0.0
        b[0] = 0.0
        coef_a.append(a)
        coef_b.append(b)

    # --- reference forward + gradients in float64
    for v in p64.values():
        v.requires_grad_(True)
    J, outs = objective(p64, c, seqs, coef_a, coef_b)
    names = [n for n, _ in param_layout(c)]
    grads = torch.autograd.grad(J, [p64[n] for n in names])
    grads = dict(zip(names, grads))
    for v in p64.values():
        v.requires_grad_(False)
    J = float(J)
    outs = [(l.detach(), lp.detach(), e.detach()) for l, lp, e in outs]

    # --- float32 noise level
    with torch.no_grad():
        J32, outs32 = objective(p32, c, seqs,
                                [a.float() for a in coef_a], [b.float() for b in coef_b])
    noise_logits = max(float((o32[0].double() - o64[0]).abs().max()) for o32, o64 in zip(outs32, outs))
    noise_logp = max(float((o32[1].double() - o64[1]).abs().max()) for o32, o64 in zip(outs32, outs))
    noise_ent = max(float((o32[2].double() - o64[2]).abs().max()) for o32, o64 in zip(outs32, outs))

    # --- check: batched (right-padded, masked) == per-sequence runs
    with torch.no_grad():
        T = max(SEQ_LENS)
        batch = torch.full((len(seqs), T), c["pad_token_id"], dtype=torch.long)
        for i, s in enumerate(seqs):
            batch[i, :len(s)] = s
        bl = forward(p64, c, batch, lengths=SEQ_LENS)
        batch_err = 0.0
        for i, s in enumerate(seqs):
            n = len(s)
            lp, ent = seq_stats(bl[i, :n], s)
            batch_err = max(batch_err, float((lp - outs[i][1]).abs().max()),
                            float((ent - outs[i][2]).abs().max()),
                            float((bl[i, :n] - outs[i][0]).abs().max()))
        if batch_err > 1e-12:
            fail("batched vs per-sequence mismatch %.3g" % batch_err)
        # also: padding content must not matter
        batch2 = batch.clone()
        for i, s in enumerate(seqs):
            batch2[i, len(s):] = 7
        bl2 = forward(p64, c, batch2, lengths=SEQ_LENS)
        for i, s in enumerate(seqs):
            if not torch.equal(bl2[i, :len(s)], bl[i, :len(s)]):
                fail("padding content leaks into sequence %d" % i)

    # --- check: the vectorized model == an independent loop implementation
    naive_err = 0.0
    for i, s in enumerate(seqs):
        ref_l = naive_forward(p64, c, [int(t) for t in s])
        naive_err = max(naive_err, float(np.abs(ref_l - outs[i][0].numpy()).max()))
    if naive_err > 1e-12:
        fail("vectorized vs loop implementation mismatch %.3g" % naive_err)

    # --- check: autograd vs central finite differences (float64)
    def J_of(pp):
        with torch.no_grad():
            return float(objective(pp, c, seqs, coef_a, coef_b)[0])

    fd_gen = torch.Generator().manual_seed(SEED + 1)
    probes = []
    for n in names:
        g = grads[n].reshape(-1)
        probes.append((n, int(g.abs().argmax())))  # largest-|grad| entry of each tensor
    for n in ["model.layers.0.self_attn.k_proj.weight", "model.layers.1.input_layernorm.weight",
              "model.layers.0.mlp.down_proj.weight", "lm_head.weight"]:
        g = grads[n].reshape(-1)
        cand = torch.nonzero(g.abs() > 1e-3 * g.abs().max()).reshape(-1)
        probes.append((n, int(cand[torch.randint(0, len(cand), (1,), generator=fd_gen)])))
    # fourth-order central stencil: O(h^4) truncation, so a large step keeps
    # the rounding error (~1e-16 |J| / h) far below the tolerance too
    h = 1e-3
    fd_results = []
    worst = 0.0
    for n, idx in probes:
        pp = {k: v.clone() for k, v in p64.items()}
        flat = pp[n].view(-1)
        x0 = float(flat[idx])
        jv = {}
        for m in (-2, -1, 1, 2):
            flat[idx] = x0 + m * h
            jv[m] = J_of(pp)
        fd = (8 * (jv[1] - jv[-1]) - (jv[2] - jv[-2])) / (12 * h)
        ad = float(grads[n].reshape(-1)[idx])
        rel = abs(fd - ad) / max(abs(ad), abs(fd), 1e-12)
        worst = max(worst, rel)
        fd_results.append({"tensor": n, "index": idx, "autograd": ad, "finite_diff": fd, "rel_err": rel})
    if worst >= 1e-6:
        for r in fd_results:
            print(r, file=sys.stderr)
        fail("finite-difference relative error %.3g >= 1e-6" % worst)

    # --- greedy decode (float64 reference; float32 must agree)
    prompt = [int(t) for t in seqs[0][:PROMPT_LEN]]
    with torch.no_grad():
        g_ids, g_lp, g_margin = greedy(p64, c, prompt, GREEDY_NEW)
        g32_ids, g32_lp, _ = greedy(p32, c, prompt, GREEDY_NEW)
    if g_ids != g32_ids:
        fail("float32 and float64 greedy decodes differ: %s vs %s" % (g32_ids, g_ids))
    greedy_lp_noise = max(abs(a - b) for a, b in zip(g_lp, g32_lp))

    # --- write
    os.makedirs(args.out, exist_ok=True)
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": c["hidden_size"],
        "intermediate_size": c["intermediate_size"],
        "num_hidden_layers": c["num_hidden_layers"],
        "num_attention_heads": c["num_attention_heads"],
        "num_key_value_heads": c["num_key_value_heads"],
        "vocab_size": c["vocab_size"],
        "max_position_embeddings": c["max_position_embeddings"],
        "rms_norm_eps": c["rms_norm_eps"],
        "rope_theta": c["rope_theta"],
        "tie_word_embeddings": c["tie_word_embeddings"],
        "bos_token_id": c["bos_token_id"],
        "eos_token_id": c["eos_token_id"],
        "pad_token_id": c["pad_token_id"],
        "hidden_act": "silu",
        "torch_dtype": "float32",
        "attention_bias": False,
        "rope_scaling": None,
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    # tern's byte-level tokenizer (256 bytes + BOS/EOS/PAD), as tern saves it
    tok = {"tern_tokenizer": "bytes", "version": 1, "bos_token_id": 256,
           "eos_token_id": 257, "pad_token_id": 258, "vocab_size": 259}
    with open(os.path.join(args.out, "tokenizer.json"), "w") as f:
        json.dump(tok, f, indent=2)
        f.write("\n")

    model_path = os.path.join(args.out, "model.safetensors")
    write_safetensors(model_path, [(n, p32[n]) for n in names])
    rnames, back, meta = read_safetensors(model_path)
    if rnames != names or meta != {"format": "pt"}:
        fail("model.safetensors read-back: names/metadata differ")
    for n in names:
        if back[n].shape != p32[n].shape or not torch.equal(back[n], p32[n]):
            fail("model.safetensors read-back: %s differs" % n)

    ref = []
    for s, toks in enumerate(seqs):
        logits, lp, ent = outs[s]
        ref += [("tokens.%d" % s, toks.to(torch.float32)),
                ("logits.%d" % s, logits),
                ("logp.%d" % s, lp),
                ("entropy.%d" % s, ent),
                ("coef_logp.%d" % s, coef_a[s]),
                ("coef_entropy.%d" % s, coef_b[s])]
    ref += [("greedy.prompt", torch.tensor(prompt, dtype=torch.float32)),
            ("greedy.tokens", torch.tensor(g_ids, dtype=torch.float32)),
            ("greedy.logp", torch.tensor(g_lp, dtype=torch.float64))]
    ref += [("grad." + n, grads[n]) for n in names]
    ref_path = os.path.join(args.out, "reference.safetensors")
    write_safetensors(ref_path, ref)
    rn, rback, _ = read_safetensors(ref_path)
    if rn != [n for n, _ in ref]:
        fail("reference.safetensors read-back: names differ")
    for n, t in ref:
        if not torch.equal(rback[n], t.to(torch.float32)):
            fail("reference.safetensors read-back: %s differs" % n)

    summary = {
        "generator": "tests/ref/llama_ref.py",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "seed": SEED,
        "config": {k: c[k] for k in ["vocab_size", "hidden_size", "intermediate_size",
                                      "num_hidden_layers", "num_attention_heads",
                                      "num_key_value_heads", "max_position_embeddings",
                                      "rms_norm_eps", "rope_theta", "tie_word_embeddings"]},
        "head_dim": c["hidden_size"] // c["num_attention_heads"],
        "param_count": sum(int(np.prod(s)) for _, s in param_layout(c)),
        "seq_lens": SEQ_LENS,
        "objective": "J = sum_s sum_{i>=1} coef_logp.s[i]*logp.s[i] + coef_entropy.s[i]*entropy.s[i]",
        "J": J,
        "J_float32": float(J32),
        "reference_precision": "float64 (weights are the float32 values widened; stored as F32)",
        "float32_vs_float64_max_abs_diff": {"logits": noise_logits, "logp": noise_logp,
                                            "entropy": noise_ent,
                                            "greedy_logp": greedy_lp_noise},
        "batched_vs_single_max_abs_diff": batch_err,
        "vectorized_vs_loop_impl_max_abs_diff": naive_err,
        "finite_difference_check": {"step": h, "scheme": "central 4th order (8(J(x+h)-J(x-h)) - (J(x+2h)-J(x-2h)))/12h, float64",
                                    "max_rel_err": worst, "probes": fd_results},
        "greedy": {"prompt": prompt, "new_tokens": GREEDY_NEW, "tokens": g_ids,
                   "logp": g_lp, "min_top1_top2_logit_margin": g_margin,
                   "ties": "lowest id", "logp_temperature": 1.0},
        "tensors": [n for n, _ in ref],
        "notes": "tokens.* and greedy.* ids are stored as F32 (exact for ids < 2^24).",
    }
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")

    print("J = %.17g" % J)
    print("float32 vs float64 max |dlogits| = %.3g" % noise_logits)
    print("finite-difference max rel err = %.3g over %d probes" % (worst, len(fd_results)))
    print("greedy tokens %s (min margin %.3g)" % (g_ids, g_margin))
    print("batched vs single max abs diff = %.3g" % batch_err)
    print("vectorized vs loop implementation max abs diff = %.3g" % naive_err)


if __name__ == "__main__":
    main()
