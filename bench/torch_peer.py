#!/usr/bin/python3
"""torch_peer.py: the PyTorch side of tern's transformer benchmark.

Mirrors bench/bench_transformer.c: the same model (tern's "bench" preset of
plugins/models/transformer/hf/hf_config.c, a 9.6M-parameter Llama: vocab 259,
hidden 384, intermediate 1024, 6 layers, 6 heads, 2 KV heads, max positions
256, RMSNorm eps 1e-5, RoPE theta 10000, untied lm_head), in float32 on the
CPU, doing the same work, so that a report can compare the two.

The model is written here in plain torch, as tests/ref/llama_ref.py writes it
(HF LlamaForCausalLM: RMSNorm, rotate_half RoPE, grouped-query attention,
SwiGLU MLP, no biases), but the script is self-contained.

What it measures, for each thread count T (torch.set_num_threads(T), and
openblas_set_num_threads(T) too: Debian's torch runs its matrix products in
the system OpenBLAS, whose thread pool torch does not set):

1. Training. A batch of 16 sequences x 256 random tokens (fixed seed). The
   objective is the mean over the 16 x 255 predicted positions of
   a * logp + b * entropy, with fixed random per-position coefficients a, b:
   logits, log_softmax, the next token's log-prob gathered, the entropy of
   the distribution, the weighted sum. Backward of -objective,
   torch.nn.utils.clip_grad_norm_(params, 1.0), one torch.optim.AdamW step
   (lr 1e-4). One warm-up step, then --train-steps timed steps (default 3).
   Training tokens/s = 16 * 256 * steps / seconds (all 4096 tokens of a step
   are counted).

2. Generation. 64 prompts of 16 random tokens, --gen-new new tokens each
   (default 128), sampled at temperature 1 (torch.multinomial on the
   softmax) with a KV cache: one batched forward over the prompts fills the
   per-layer K/V tensors (prefill), then each step runs one token for all 64
   rows against the cache; nothing is recomputed. Generation tokens/s =
   64 * new / seconds, the wall time of the whole generate call (prefill
   included); the prefill time is printed separately. A short untimed
   generate call (2 new tokens) warms up first.

3. Peak RSS at the end (resource.getrusage(RUSAGE_SELF).ru_maxrss, KiB).

The script sets OMP_WAIT_POLICY=PASSIVE (unless already set) before it
imports torch (bench/peer_threads.py, shared with bench/torch_vlm_peer.py):
otherwise torch's spinning OpenMP threads and OpenBLAS's threads fight over
the 2 cores and T = 2 runs several times slower.

--compute bf16 runs the same work under torch.autocast("cpu",
dtype=torch.bfloat16) (PyTorch's own mixed precision on the CPU: the matrix
products in bf16 through oneDNN, float32 weights, gradients and AdamW), the
counterpart of tern's compute = "bf16". The default is float32.

Without --threads both T = 1 and T = 2 run; the summary takes, per metric,
the best of them. The output is human-readable lines and a final line

  TORCH_JSON {"torch_version": ..., "threads": T, "train_tokens_per_s": ...,
              "gen_tokens_per_s": ..., "per_threads": {"1": {...}, ...},
              "peak_rss_kib": ...}

where "threads" is the T with the best training throughput (and
"train_threads" / "gen_threads" say which T each headline figure came from).

Usage:
  /usr/bin/python3 bench/torch_peer.py                 # full run, T = 1 and 2
  /usr/bin/python3 bench/torch_peer.py --threads 2
  /usr/bin/python3 bench/torch_peer.py --compute bf16
  /usr/bin/python3 bench/torch_peer.py --quick         # smoke run, seconds

--quick keeps the bench model but shrinks the work: training 4 x 64 tokens
for 2 steps, generation 8 prompts x 16 tokens + 8 new tokens.

Dependencies: Python 3, torch (1.13 is enough), numpy not needed.
"""

import argparse
import contextlib
import json
import math
import resource
import sys
import time

from peer_threads import OMP_WAIT_POLICY, blas_info, set_threads  # noqa: E402 (sets it before torch)

import torch  # noqa: E402

SEED = 20240607

CONFIG = {  # tern's "bench" preset (hf_config.c, llama_preset)
    "vocab_size": 259,  # bytes 0..255, BOS 256, EOS 257, PAD 258
    "hidden_size": 384,
    "intermediate_size": 1024,
    "num_hidden_layers": 6,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
}


# --------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------

def rmsnorm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_tables(n_pos, hd, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.outer(torch.arange(n_pos, dtype=torch.float64), inv_freq)
    emb = torch.cat((ang, ang), dim=-1)  # [P, HD]
    return emb.cos().float(), emb.sin().float()


class Llama(torch.nn.Module):
    def __init__(self, c, gen):
        super().__init__()
        self.c = c
        V, D, F = c["vocab_size"], c["hidden_size"], c["intermediate_size"]
        H, KV = c["num_attention_heads"], c["num_key_value_heads"]
        self.H, self.KV, self.HD = H, KV, D // H
        self.rep = H // KV
        self.eps = c["rms_norm_eps"]
        Q, K = H * self.HD, KV * self.HD

        def mat(*shape):  # N(0, 0.02)
            return torch.nn.Parameter(0.02 * torch.randn(shape, generator=gen))

        def norm(n):  # 1 + N(0, 0.1)
            return torch.nn.Parameter(1.0 + 0.1 * torch.randn(n, generator=gen))

        self.embed = mat(V, D)
        self.layers = torch.nn.ModuleList()
        for _ in range(c["num_hidden_layers"]):
            L = torch.nn.Module()
            L.ln1 = norm(D)
            L.wq, L.wk, L.wv, L.wo = mat(Q, D), mat(K, D), mat(K, D), mat(D, Q)
            L.ln2 = norm(D)
            L.wg, L.wu, L.wd = mat(F, D), mat(F, D), mat(D, F)
            self.layers.append(L)
        self.norm = norm(D)
        self.lm_head = self.embed if c["tie_word_embeddings"] else mat(V, D)
        cos, sin = rope_tables(c["max_position_embeddings"], self.HD, c["rope_theta"])
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def n_params(self):
        return sum(p.numel() for p in self.parameters())

    # ---- training forward: full causal sequences -------------------------
    def forward(self, tokens):
        """tokens [B, T] -> logits [B, T, V]."""
        B, T = tokens.shape
        H, KV, HD = self.H, self.KV, self.HD
        x = self.embed[tokens]
        cos, sin = self.cos[:T], self.sin[:T]
        mask = torch.full((T, T), float("-inf")).triu(1)  # additive causal mask
        scale = 1.0 / math.sqrt(HD)
        for L in self.layers:
            h = rmsnorm(x, L.ln1, self.eps)
            q = (h @ L.wq.T).view(B, T, H, HD).transpose(1, 2)
            k = (h @ L.wk.T).view(B, T, KV, HD).transpose(1, 2)
            v = (h @ L.wv.T).view(B, T, KV, HD).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = k.repeat_interleave(self.rep, dim=1)
            v = v.repeat_interleave(self.rep, dim=1)
            s = (q @ k.transpose(-1, -2)) * scale + mask
            a = torch.softmax(s, dim=-1)
            o = (a @ v).transpose(1, 2).reshape(B, T, H * HD)
            x = x + o @ L.wo.T
            h2 = rmsnorm(x, L.ln2, self.eps)
            x = x + (torch.nn.functional.silu(h2 @ L.wg.T) * (h2 @ L.wu.T)) @ L.wd.T
        x = rmsnorm(x, self.norm, self.eps)
        return x @ self.lm_head.T

    # ---- inference forward with a KV cache --------------------------------
    def new_cache(self, B, n_pos):
        shape = (B, self.KV, n_pos, self.HD)
        return [(torch.empty(shape), torch.empty(shape)) for _ in self.layers]

    def step(self, tokens, cache, start):
        """tokens [B, T] at positions start..start+T-1; writes their K/V into
        cache (preallocated [B, KV, P, HD] per layer), attends to cache
        positions 0..start+T-1. Returns the last position's logits [B, V]."""
        B, T = tokens.shape
        H, KV, HD, rep = self.H, self.KV, self.HD, self.rep
        end = start + T
        x = self.embed[tokens]
        cos, sin = self.cos[start:end], self.sin[start:end]
        scale = 1.0 / math.sqrt(HD)
        mask = None
        if T > 1:  # query t (position start+t) sees keys 0..start+t
            mask = torch.full((T, end), float("-inf")).triu(start + 1)
            mask = mask.repeat(rep, 1)  # rows: (query head in group, t)
        for L, (kc, vc) in zip(self.layers, cache):
            h = rmsnorm(x, L.ln1, self.eps)
            q = (h @ L.wq.T).view(B, T, H, HD).transpose(1, 2)
            k = (h @ L.wk.T).view(B, T, KV, HD).transpose(1, 2)
            v = (h @ L.wv.T).view(B, T, KV, HD).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            kc[:, :, start:end] = k * cos + rotate_half(k) * sin
            vc[:, :, start:end] = v
            K, Vv = kc[:, :, :end], vc[:, :, :end]
            # grouped-query attention without copying K/V: the rep query heads
            # of a group share one [end, HD] K and V.
            qg = q.reshape(B, KV, rep * T, HD)
            s = (qg @ K.transpose(-1, -2)) * scale  # [B, KV, rep*T, end]
            if mask is not None:
                s = s + mask
            a = torch.softmax(s, dim=-1)
            o = (a @ Vv).view(B, H, T, HD).transpose(1, 2).reshape(B, T, H * HD)
            x = x + o @ L.wo.T
            h2 = rmsnorm(x, L.ln2, self.eps)
            x = x + (torch.nn.functional.silu(h2 @ L.wg.T) * (h2 @ L.wu.T)) @ L.wd.T
        x = rmsnorm(x[:, -1], self.norm, self.eps)
        return x @ self.lm_head.T


# --------------------------------------------------------------------------
# The two workloads
# --------------------------------------------------------------------------

def objective(model, tokens, coef_a, coef_b):
    """mean over predicted positions of a * logp + b * entropy."""
    logits = model(tokens)[:, :-1]  # [B, T-1, V] predicts tokens[:, 1:]
    lsm = torch.log_softmax(logits, dim=-1)
    logp = lsm.gather(-1, tokens[:, 1:].unsqueeze(-1)).squeeze(-1)
    ent = -(lsm.exp() * lsm).sum(-1)
    return (coef_a * logp + coef_b * ent).mean()


def precision(compute):
    """The context the forward passes run in: float32, or PyTorch's CPU autocast to bf16."""
    if compute == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def train_step(model, opt, tokens, coef_a, coef_b, compute):
    opt.zero_grad(set_to_none=True)
    with precision(compute):
        J = objective(model, tokens, coef_a, coef_b).float()
    (-J).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(J)


@torch.no_grad()
def generate(model, prompts, n_new, gen, compute):
    """Returns (new tokens [B, n_new], prefill seconds)."""
    B, P = prompts.shape
    cache = model.new_cache(B, P + n_new)
    t0 = time.perf_counter()
    with precision(compute):
        logits = model.step(prompts, cache, 0).float()
    t_prefill = time.perf_counter() - t0
    out = torch.empty(B, n_new, dtype=torch.long)
    for i in range(n_new):
        nxt = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen)  # [B, 1]
        out[:, i] = nxt[:, 0]
        if i + 1 < n_new:
            with precision(compute):
                logits = model.step(nxt, cache, P + i).float()
    return out, t_prefill


def run_one(T, sz, c, compute):
    set_threads(T)
    gen = torch.Generator().manual_seed(SEED)
    model = Llama(c, gen)
    V = c["vocab_size"]
    tokens = torch.randint(0, V, (sz["train_b"], sz["train_t"]), generator=gen)
    coef_a = torch.randn(sz["train_b"], sz["train_t"] - 1, generator=gen)
    coef_b = 0.1 * torch.randn(sz["train_b"], sz["train_t"] - 1, generator=gen)
    prompts = torch.randint(0, V, (sz["gen_b"], sz["gen_prompt"]), generator=gen)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    print("[T=%d] training: batch %d x %d, 1 warm-up + %d timed steps"
          % (T, sz["train_b"], sz["train_t"], sz["steps"]), flush=True)
    t0 = time.perf_counter()
    J = train_step(model, opt, tokens, coef_a, coef_b, compute)
    warm = time.perf_counter() - t0
    print("[T=%d]   warm-up step %.3f s, J = %.6f" % (T, warm, J), flush=True)
    step_s = []
    for _ in range(sz["steps"]):
        t0 = time.perf_counter()
        J = train_step(model, opt, tokens, coef_a, coef_b, compute)
        step_s.append(time.perf_counter() - t0)
        print("[T=%d]   step %.3f s, J = %.6f" % (T, step_s[-1], J), flush=True)
    train_s = sum(step_s)
    train_tps = sz["train_b"] * sz["train_t"] * sz["steps"] / train_s
    print("[T=%d]   training: %.0f tokens/s (%.3f s/step)" % (T, train_tps, train_s / sz["steps"]),
          flush=True)

    model.requires_grad_(False)
    del opt
    print("[T=%d] generation: %d prompts x %d tokens, %d new tokens each, temperature 1, KV cache"
          % (T, sz["gen_b"], sz["gen_prompt"], sz["gen_new"]), flush=True)
    sgen = torch.Generator().manual_seed(SEED + 1)
    generate(model, prompts, min(2, sz["gen_new"]), sgen, compute)  # warm-up, untimed
    t0 = time.perf_counter()
    out, prefill_s = generate(model, prompts, sz["gen_new"], sgen, compute)
    gen_s = time.perf_counter() - t0
    n_gen = sz["gen_b"] * sz["gen_new"]
    gen_tps = n_gen / gen_s
    decode_s = gen_s - prefill_s
    print("[T=%d]   prefill %.3f s, decode %.3f s (%.2f ms/step), total %.3f s"
          % (T, prefill_s, decode_s, 1e3 * decode_s / max(1, sz["gen_new"] - 1), gen_s), flush=True)
    print("[T=%d]   generation: %.0f tokens/s (%d tokens, first row starts %s)"
          % (T, gen_tps, n_gen, out[0, :8].tolist()), flush=True)
    return {
        "train_tokens_per_s": train_tps,
        "train_seconds": train_s,
        "train_step_seconds": step_s,
        "train_warmup_seconds": warm,
        "gen_tokens_per_s": gen_tps,
        "gen_seconds": gen_s,
        "gen_prefill_seconds": prefill_s,
        "gen_decode_seconds": decode_s,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, help="torch and OpenBLAS threads (default: run 1 and 2)")
    ap.add_argument("--train-steps", type=int, help="timed training steps (default 3)")
    ap.add_argument("--gen-new", type=int, help="new tokens per prompt (default 128)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes for a smoke run")
    ap.add_argument("--compute", choices=("fp32", "bf16"), default="fp32",
                    help="fp32, or bf16 autocast (default fp32)")
    args = ap.parse_args()

    c = dict(CONFIG)
    if args.quick:
        sz = {"train_b": 4, "train_t": 64, "steps": 2, "gen_b": 8, "gen_prompt": 16, "gen_new": 8}
    else:
        sz = {"train_b": 16, "train_t": 256, "steps": 3, "gen_b": 64, "gen_prompt": 16,
              "gen_new": 128}
    if args.train_steps is not None:
        sz["steps"] = args.train_steps
    if args.gen_new is not None:
        sz["gen_new"] = args.gen_new
    if sz["steps"] < 1 or sz["gen_new"] < 1:
        ap.error("--train-steps and --gen-new must be at least 1")
    if sz["gen_prompt"] + sz["gen_new"] > c["max_position_embeddings"]:
        ap.error("prompt + --gen-new exceeds %d positions" % c["max_position_embeddings"])
    if args.threads is not None and args.threads < 1:
        ap.error("--threads must be at least 1")
    threads = [args.threads] if args.threads is not None else [1, 2]

    n_params = sum(p.numel() for p in Llama(c, torch.Generator().manual_seed(0)).parameters())
    print("torch %s, BLAS: %s, OMP_WAIT_POLICY=%s"
          % (torch.__version__, blas_info(), OMP_WAIT_POLICY))
    print("%s, model 'bench': %d parameters, %s%s"
          % ("bf16 autocast" if args.compute == "bf16" else "float32", n_params,
             ", ".join("%s=%s" % (k, c[k]) for k in ("vocab_size", "hidden_size",
                                                      "intermediate_size", "num_hidden_layers",
                                                      "num_attention_heads",
                                                      "num_key_value_heads")),
             " (quick)" if args.quick else ""), flush=True)

    t_all = time.perf_counter()
    per = {}
    for T in threads:
        per[str(T)] = run_one(T, sz, c, args.compute)
    wall = time.perf_counter() - t_all

    best_train = max(per, key=lambda k: per[k]["train_tokens_per_s"])
    best_gen = max(per, key=lambda k: per[k]["gen_tokens_per_s"])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("summary: training %.0f tokens/s (T=%s), generation %.0f tokens/s (T=%s), "
          "peak RSS %d KiB, %.1f s"
          % (per[best_train]["train_tokens_per_s"], best_train,
             per[best_gen]["gen_tokens_per_s"], best_gen, rss, wall), flush=True)
    res = {
        "torch_version": torch.__version__,
        "compute": args.compute,
        "blas": blas_info(),
        "omp_wait_policy": OMP_WAIT_POLICY,
        "threads": int(best_train),
        "train_threads": int(best_train),
        "gen_threads": int(best_gen),
        "train_tokens_per_s": per[best_train]["train_tokens_per_s"],
        "gen_tokens_per_s": per[best_gen]["gen_tokens_per_s"],
        "per_threads": per,
        "peak_rss_kib": rss,
        "n_params": n_params,
        "quick": bool(args.quick),
        "sizes": sz,
        "wall_seconds": wall,
    }
    print("TORCH_JSON " + json.dumps(res, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
