#!/opt/refenv/bin/python
"""torch_vlm_peer.py: the PyTorch side of tern's vision-language benchmark.

Mirrors `bench_transformer --vlm` (bench/bench_transformer.c): the same model,
tern's "vlm-bench" preset (plugins/models/transformer/hf/hf_config.c,
llama_preset), built as Hugging Face transformers'
LlavaForConditionalGeneration from a LlavaConfig equal to it, in float32 on
the CPU, doing the same work, so that a report can compare the two:

  text:      LlamaConfig: vocab 260 (bytes, BOS 256, EOS 257, PAD 258, image
             259), hidden 384, intermediate 1024, 6 layers, 6 heads, 2 KV
             heads, max positions 512, RMSNorm eps 1e-5, RoPE theta 10000,
             untied lm_head
  vision:    CLIPVisionConfig: image 64 x 64, patch 8 (64 patches + CLS),
             hidden 256, intermediate 1024, 4 layers, 4 heads, quick_gelu,
             layer_norm_eps 1e-5
  LLaVA:     image_token_index 259, vision_feature_layer -1 (the last layer's
             output), vision_feature_select_strategy "default" (CLS dropped:
             64 image rows), projector_hidden_act "gelu" (erf), projector
             biases, tie_word_embeddings false

13,114,496 parameters, tern's count for the preset (CLIP's post_layernorm is
in both and used by neither). Random init (transformers' own initialisation,
torch.manual_seed fixed); the pixels are given directly as pixel_values:
random bytes 0..255 per channel, scaled to [0, 1] and normalised with CLIP's
mean and std (what tern does to its random 8-bit images), [B, 3, 64, 64].

Attention: attn_implementation "sdpa" by default (--attn eager for the other).
It is transformers' default and PyTorch's best case on the CPU: with no
padding no mask is built, so every attention (the CLIP tower's, the
decoder's in training and prefill with is_causal, the decode steps' one row
against the cache; grouped-query by enable_gqa) is one call of
F.scaled_dot_product_attention with no mask, torch's fused CPU kernels where
they apply, where eager materialises the score matrices and repeats K/V. On
this bench's 2-core machine sdpa trained as fast as eager or slightly faster
(2.2-2.3 against 2.4-2.5 s/step at T = 2, alternating in one process) and
decoded faster (40 against 46-60 ms/step).

What it measures, for each thread count T (torch.set_num_threads(T); this
torch does its products in MKL and oneDNN, which follow it; an OpenBLAS that
torch has loaded, as Debian's torch does, is set to T as well):

1. Training. A batch of 16 sequences x 256 rows (fixed seed), each opening
   with its own image's 64 image rows (image tokens, 259) then 192 random
   text tokens (0..255), as tern's bench lays them out (no BOS). One forward
   of the whole model (use_cache False): the CLIP tower on the 16 images, the
   projector, the features scattered into the image rows, the decoder. The
   objective is the mean over the 16 x 255 predicted positions of
   a * logp + b * entropy, with fixed random per-position coefficients a, b
   (a ~ N(0, 1), b ~ 0.1 N(0, 1), as bench/torch_peer.py): logits,
   log_softmax, the next token's log-prob gathered, the entropy of the
   distribution, the weighted sum. Backward of -objective (down into the
   tower: it is trained, as tern's bench trains it),
   torch.nn.utils.clip_grad_norm_(params, 1.0), one torch.optim.AdamW step
   (lr 1e-4, betas 0.9/0.999, eps 1e-8, weight decay 0, tern's settings).
   One warm-up step, then --train-steps timed steps (default 3). Training
   tokens/s = 16 * 256 * steps / seconds (all 4096 rows of a step are
   counted, the image rows too, as tern counts them); images/s = 16 * steps
   / seconds.

2. Generation. 64 prompts of 80 tokens: BOS, 64 image tokens, 15 random
   text tokens, each with its own image; --gen-new new tokens each (default
   128), sampled at temperature 1 with a KV cache. By default through
   transformers' own generate (--gen-impl hf):
     model.generate(input_ids, attention_mask, pixel_values, do_sample=True,
                    temperature=1.0, top_k=0, top_p=1.0,
                    max_new_tokens=N, min_new_tokens=N)
   top_k=0 turns off the generation config's default top-k 50 (plain
   sampling from the softmax, as tern samples); min_new_tokens = N keeps every
   row to N tokens (EOS masked until then; tern's bench has no stop token,
   so it makes N per row too). The cache is transformers' default
   (DynamicCache); the prefill runs the tower on the 64 images and the
   decoder over the 64 x 80 rows, then each step runs one token for all 64
   rows against the cache. --gen-impl loop runs the same model forward in a
   hand-written loop instead (prefill with pixel_values, logits_to_keep 1,
   then one model call per step with a DynamicCache,
   torch.multinomial(softmax(logits))): what generate's own machinery
   (logits processors, stopping criteria, input preparation) costs on top.
   Generation tokens/s = 64 * new / seconds, the wall time of the whole call
   (image encoding and prefill included, as tern's bench times them); the
   prefill time (up to the first sampled token: a logits processor notes the
   moment under generate) is printed separately. A short untimed call (2 new
   tokens) warms up first.

3. Peak RSS at the end (resource.getrusage(RUSAGE_SELF).ru_maxrss, KiB).

The script sets OMP_WAIT_POLICY=PASSIVE (unless already set) before it
imports torch (bench/peer_threads.py, shared with bench/torch_peer.py):
torch's spinning OpenMP threads otherwise fight over 2 shared cores.

Without --threads both T = 1 and T = 2 run; the summary takes, per metric,
the best of them. The output is human-readable lines and a final line

  TORCH_JSON {"torch_version": ..., "transformers_version": ..., "threads": T,
              "train_tokens_per_s": ..., "gen_tokens_per_s": ...,
              "per_threads": {"1": {...}, ...}, "peak_rss_kib": ...}

where "threads" is the T with the best training throughput (and
"train_threads" / "gen_threads" say which T each headline figure came from).

Usage:
  /opt/refenv/bin/python bench/torch_vlm_peer.py              # full run, T = 1 and 2
  /opt/refenv/bin/python bench/torch_vlm_peer.py --threads 2
  /opt/refenv/bin/python bench/torch_vlm_peer.py --gen-impl loop
  /opt/refenv/bin/python bench/torch_vlm_peer.py --quick      # smoke run, seconds

--quick keeps the vlm-bench model but shrinks the work: training 2 x 96 rows
(64 image rows, 32 text) for 1 timed step, generation 4 prompts + 8 new
tokens.

Dependencies: Python 3, torch, transformers 5.x (LlavaForConditionalGeneration;
no PIL, no tokenizer, no network).
"""

import argparse
import json
import resource
import sys
import time

from peer_threads import OMP_WAIT_POLICY, blas_info, set_threads  # noqa: E402 (sets it before torch)

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (CLIPVisionConfig, LlamaConfig, LlavaConfig,  # noqa: E402
                          LlavaForConditionalGeneration, LogitsProcessor,
                          LogitsProcessorList)

SEED = 20240607
BOS, EOS, PAD, IMAGE = 256, 257, 258, 259
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)  # preprocessor_config.json's, tern's
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)

TEXT = {  # tern's "bench" preset, one token more (hf_config.c, llama_preset)
    "vocab_size": 260,
    "hidden_size": 384,
    "intermediate_size": 1024,
    "num_hidden_layers": 6,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "max_position_embeddings": 512,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "bos_token_id": BOS,
    "eos_token_id": EOS,
    "pad_token_id": PAD,
}
VISION = {  # vlm-bench's tower
    "hidden_size": 256,
    "intermediate_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_channels": 3,
    "image_size": 64,
    "patch_size": 8,
    "hidden_act": "quick_gelu",
    "layer_norm_eps": 1e-5,
}


def n_image_rows():
    return (VISION["image_size"] // VISION["patch_size"]) ** 2  # CLS dropped


def llava_config(attn):
    c = LlavaConfig(vision_config=CLIPVisionConfig(**VISION), text_config=LlamaConfig(**TEXT),
                    image_token_index=IMAGE, image_seq_length=n_image_rows(),
                    projector_hidden_act="gelu", vision_feature_layer=-1,
                    vision_feature_select_strategy="default", multimodal_projector_bias=True,
                    tie_word_embeddings=False)
    c._attn_implementation = attn  # the tower's and the decoder's too
    return c


# --------------------------------------------------------------------------
# The inputs
# --------------------------------------------------------------------------

def random_pixels(n, gen):
    """n random 8-bit RGB images, normalised as CLIP's processor does: [n, 3, S, S]."""
    S = VISION["image_size"]
    x = torch.randint(0, 256, (n, 3, S, S), generator=gen).float() / 255.0
    mean = torch.tensor(CLIP_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(CLIP_STD).view(1, 3, 1, 1)
    return ((x - mean) / std).contiguous()


# --------------------------------------------------------------------------
# The two workloads
# --------------------------------------------------------------------------

def objective(model, tokens, pixels, coef_a, coef_b):
    """mean over predicted positions of a * logp + b * entropy."""
    logits = model(input_ids=tokens, pixel_values=pixels, use_cache=False).logits[:, :-1]
    lsm = torch.log_softmax(logits, dim=-1)
    logp = lsm.gather(-1, tokens[:, 1:].unsqueeze(-1)).squeeze(-1)
    ent = -(lsm.exp() * lsm).sum(-1)
    return (coef_a * logp + coef_b * ent).mean()


def train_step(model, opt, tokens, pixels, coef_a, coef_b):
    opt.zero_grad(set_to_none=True)
    J = objective(model, tokens, pixels, coef_a, coef_b)
    (-J).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(J.detach())


class FirstCall(LogitsProcessor):
    """Notes when generate first samples: the end of its prefill. Leaves the scores."""

    def __init__(self):
        self.t = None

    def __call__(self, input_ids, scores):
        if self.t is None:
            self.t = time.perf_counter()
        return scores


@torch.no_grad()
def generate_hf(model, prompts, pixels, n_new):
    """transformers' generate. Returns (new tokens [B, n_new], prefill seconds)."""
    mark = FirstCall()
    t0 = time.perf_counter()
    out = model.generate(input_ids=prompts, attention_mask=torch.ones_like(prompts),
                         pixel_values=pixels, do_sample=True, temperature=1.0, top_k=0,
                         top_p=1.0, max_new_tokens=n_new, min_new_tokens=n_new,
                         pad_token_id=PAD, eos_token_id=EOS,
                         logits_processor=LogitsProcessorList([mark]))
    return out[:, prompts.shape[1]:], mark.t - t0


@torch.no_grad()
def generate_loop(model, prompts, pixels, n_new):
    """The same model's forward in a hand-written sampling loop with a
    DynamicCache. Returns (new tokens [B, n_new], prefill seconds)."""
    from transformers import DynamicCache
    B = prompts.shape[0]
    cache = DynamicCache(config=model.config.text_config)
    t0 = time.perf_counter()
    logits = model(input_ids=prompts, pixel_values=pixels, cache=cache, use_cache=True,
                   logits_to_keep=1).logits[:, -1]
    t_prefill = time.perf_counter() - t0
    out = torch.empty(B, n_new, dtype=torch.long)
    for i in range(n_new):
        nxt = torch.multinomial(torch.softmax(logits, dim=-1), 1)  # [B, 1]
        out[:, i] = nxt[:, 0]
        if i + 1 < n_new:
            logits = model(input_ids=nxt, cache=cache, use_cache=True,
                           logits_to_keep=1).logits[:, -1]
    return out, t_prefill


def run_one(T, sz, attn, gen_impl):
    set_threads(T)
    torch.manual_seed(SEED)  # the weights (transformers' init) and generate's sampling
    model = LlavaForConditionalGeneration(llava_config(attn)).to(torch.float32)
    gen = torch.Generator().manual_seed(SEED)
    NV, B, L = n_image_rows(), sz["train_b"], sz["train_t"]
    tokens = torch.randint(0, 256, (B, L), generator=gen)
    tokens[:, :NV] = IMAGE
    pixels = random_pixels(B, gen)
    coef_a = torch.randn(B, L - 1, generator=gen)
    coef_b = 0.1 * torch.randn(B, L - 1, generator=gen)
    P, PL = sz["gen_b"], 1 + NV + 15
    prompts = torch.randint(0, 256, (P, PL), generator=gen)
    prompts[:, 0] = BOS
    prompts[:, 1:1 + NV] = IMAGE
    gpixels = random_pixels(P, gen)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.0)

    model.train()  # dropout is 0 in both configs: the same arithmetic as eval
    print("[T=%d] training: batch %d x %d (%d image rows + %d text tokens), "
          "1 warm-up + %d timed steps" % (T, B, L, NV, L - NV, sz["steps"]), flush=True)
    t0 = time.perf_counter()
    J = train_step(model, opt, tokens, pixels, coef_a, coef_b)
    warm = time.perf_counter() - t0
    print("[T=%d]   warm-up step %.3f s, J = %.6f" % (T, warm, J), flush=True)
    step_s = []
    for _ in range(sz["steps"]):
        t0 = time.perf_counter()
        J = train_step(model, opt, tokens, pixels, coef_a, coef_b)
        step_s.append(time.perf_counter() - t0)
        print("[T=%d]   step %.3f s, J = %.6f" % (T, step_s[-1], J), flush=True)
    train_s = sum(step_s)
    train_tps = B * L * sz["steps"] / train_s
    print("[T=%d]   training: %.0f tokens/s, %.1f images/s (%.3f s/step)"
          % (T, train_tps, B * sz["steps"] / train_s, train_s / sz["steps"]), flush=True)

    model.eval()
    model.requires_grad_(False)
    del opt
    generate = generate_hf if gen_impl == "hf" else generate_loop
    print("[T=%d] generation (%s): %d prompts x %d tokens (BOS, %d image, 15 text), "
          "%d new tokens each, temperature 1, KV cache"
          % (T, "transformers generate" if gen_impl == "hf" else "hand-written loop",
             P, PL, NV, sz["gen_new"]), flush=True)
    generate(model, prompts, gpixels, min(2, sz["gen_new"]))  # warm-up, untimed
    t0 = time.perf_counter()
    out, prefill_s = generate(model, prompts, gpixels, sz["gen_new"])
    gen_s = time.perf_counter() - t0
    n_gen = out.numel()
    if n_gen != P * sz["gen_new"]:
        raise SystemExit("generation made %d tokens, not %d" % (n_gen, P * sz["gen_new"]))
    gen_tps = n_gen / gen_s
    decode_s = gen_s - prefill_s
    print("[T=%d]   prefill %.3f s, decode %.3f s (%.2f ms/step), total %.3f s"
          % (T, prefill_s, decode_s, 1e3 * decode_s / max(1, sz["gen_new"] - 1), gen_s),
          flush=True)
    print("[T=%d]   generation: %.0f tokens/s (%d tokens, first row starts %s)"
          % (T, gen_tps, n_gen, out[0, :8].tolist()), flush=True)
    return {
        "train_tokens_per_s": train_tps,
        "train_images_per_s": B * sz["steps"] / train_s,
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
    ap.add_argument("--threads", type=int, help="torch threads (default: run 1 and 2)")
    ap.add_argument("--train-steps", type=int, help="timed training steps (default 3)")
    ap.add_argument("--gen-new", type=int, help="new tokens per prompt (default 128)")
    ap.add_argument("--gen-impl", choices=("hf", "loop"), default="hf",
                    help="transformers' generate, or a hand-written KV-cache loop (default hf)")
    ap.add_argument("--attn", choices=("sdpa", "eager"), default="sdpa",
                    help="attn_implementation (default sdpa)")
    ap.add_argument("--quick", action="store_true", help="tiny sizes for a smoke run")
    args = ap.parse_args()

    if args.quick:
        sz = {"train_b": 2, "train_t": 96, "steps": 1, "gen_b": 4, "gen_new": 8}
    else:
        sz = {"train_b": 16, "train_t": 256, "steps": 3, "gen_b": 64, "gen_new": 128}
    if args.train_steps is not None:
        sz["steps"] = args.train_steps
    if args.gen_new is not None:
        sz["gen_new"] = args.gen_new
    if sz["steps"] < 1 or sz["gen_new"] < 1:
        ap.error("--train-steps and --gen-new must be at least 1")
    if 1 + n_image_rows() + 15 + sz["gen_new"] > TEXT["max_position_embeddings"]:
        ap.error("prompt + --gen-new exceeds %d positions" % TEXT["max_position_embeddings"])
    if args.threads is not None and args.threads < 1:
        ap.error("--threads must be at least 1")
    threads = [args.threads] if args.threads is not None else [1, 2]

    n_params = sum(p.numel() for p in LlavaForConditionalGeneration(
        llava_config(args.attn)).parameters())
    print("torch %s, transformers %s, BLAS: %s, OMP_WAIT_POLICY=%s"
          % (torch.__version__, transformers.__version__, blas_info(), OMP_WAIT_POLICY))
    print("float32, LlavaForConditionalGeneration 'vlm-bench': %d parameters, attn %s; "
          "text %s; vision %s%s"
          % (n_params, args.attn,
             ", ".join("%s=%s" % (k, TEXT[k]) for k in (
                 "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                 "num_attention_heads", "num_key_value_heads")),
             ", ".join("%s=%s" % (k, VISION[k]) for k in (
                 "image_size", "patch_size", "hidden_size", "intermediate_size",
                 "num_hidden_layers", "num_attention_heads")),
             " (quick)" if args.quick else ""), flush=True)

    t_all = time.perf_counter()
    per = {}
    for T in threads:
        per[str(T)] = run_one(T, sz, args.attn, args.gen_impl)
    wall = time.perf_counter() - t_all

    best_train = max(per, key=lambda k: per[k]["train_tokens_per_s"])
    best_gen = max(per, key=lambda k: per[k]["gen_tokens_per_s"])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("summary: training %.0f tokens/s (T=%s), generation %.0f tokens/s (T=%s), "
          "peak RSS %d KiB, %.1f s"
          % (per[best_train]["train_tokens_per_s"], best_train,
             per[best_gen]["gen_tokens_per_s"], best_gen, rss, wall), flush=True)
    res = {
        "model": "vlm-bench",
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "compute": "fp32",
        "attn_implementation": args.attn,
        "gen_impl": args.gen_impl,
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
