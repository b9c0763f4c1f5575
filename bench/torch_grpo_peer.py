#!/usr/bin/env python3
"""torch_grpo_peer.py: the whole RL step in plain PyTorch, the peer of tern's.

What a user writing a GRPO loop by hand would write, on the model and tasks
of tern's real-model example (etc/examples/smollm2-arith.cfg), step for step
the work of one tern RL step with a KL term to the reference:

  1. generate   batch_tasks prompts (the chat template, the system prompt),
                each repeated group_size times (num_return_sequences: no
                prefix sharing), sampled with a KV cache (transformers'
                model.generate, do_sample, temperature, top_k 0, top_p 1),
                up to max_tokens new tokens, stopping at EOS; lengths vary
  2. reward     tern's math verifier (`tern reward score --plugin math`,
                the same answer_forms), so both sides judge alike
  3. advantages GRPO: (r - mean) / (std + 1e-6) within each group
  4. score      each response's token log-probs under the policy (no grad:
                the PPO ratio's denominator) and under the frozen reference
                (a copy of the starting weights)
  5. loss       PPO clip 0.2 on the ratio, plus kl_coef times the k3 KL to
                the reference per token, token-mean over the batch;
                backward in micro-batches, clip the gradient norm at 1.0,
                one AdamW step (betas 0.9 and 0.99, eps 1e-8, weight decay
                0: tern's defaults)

The model is the Hugging Face directory `tern model convert` writes from the
GGUF file (the same weights, tokenizer and chat template tern loads), run in
float32 (--compute fp32) or under torch.autocast("cpu", bfloat16) (--compute
bf16: tern's model.compute = "bf16"). torch runs on --threads threads.

Prints a line per step (seconds, of which generation; generated tokens;
mean reward) and a final line `GRPO_JSON {...}` with the mean seconds per
step over steps 2.. (the first warms up), generation tokens/s and peak RSS.
bench/run_grpo.sh runs it beside tern and prints the ratio.

Needs torch and transformers (PyPI).
"""
import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def load_tasks(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def verify(tern, forms, answers, responses):
    cmd = [tern, "reward", "score", "--plugin", "math", "-o", "answer_forms=" + json.dumps(forms)]
    lines = "".join(json.dumps({"answer": a, "response": r}) + "\n"
                    for a, r in zip(answers, responses))
    out = subprocess.run(cmd, input=lines, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit("torch_grpo_peer: %s failed: %s" % (" ".join(cmd), out.stderr))
    rewards = [float(json.loads(l).get("reward", 0.0)) for l in out.stdout.splitlines() if l.strip()]
    if len(rewards) != len(responses):
        sys.exit("torch_grpo_peer: %d verdicts for %d responses" % (len(rewards), len(responses)))
    return rewards


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="Hugging Face directory (tern model convert)")
    ap.add_argument("--train", required=True)
    ap.add_argument("--system", default="")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch-tasks", type=int, default=8)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--micro-batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--kl-coef", type=float, default=0.04)
    ap.add_argument("--clip", type=float, default=0.2)
    ap.add_argument("--compute", choices=("fp32", "bf16"), default="fp32")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--answer-forms", default='["answer_is", "final_line"]')
    ap.add_argument("--tern", default="build/bin/tern")
    a = ap.parse_args()

    import contextlib
    import copy

    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)
    tok = AutoTokenizer.from_pretrained(a.model)
    tok.padding_side = "left"
    policy = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32)
    reference = copy.deepcopy(policy).eval()
    for p in reference.parameters():
        p.requires_grad_(False)
    opt = torch.optim.AdamW(policy.parameters(), lr=a.lr, betas=(0.9, 0.99), eps=1e-8,
                            weight_decay=0.0)
    tasks = load_tasks(a.train)
    forms = json.loads(a.answer_forms)
    G, eos, pad = a.group_size, tok.eos_token_id, tok.pad_token_id
    if pad is None:
        pad = eos

    def precision():
        if a.compute == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def token_logps(model, ids, attn, n_prompt):
        """log p of each response token: [B, T_resp]."""
        pos = (torch.cumsum(attn, dim=1) - 1).clamp(min=0)  # left padding: as generate does
        out = model(input_ids=ids, attention_mask=attn, position_ids=pos).logits.float()
        logits = out[:, n_prompt - 1:-1, :]
        return torch.log_softmax(logits, dim=-1).gather(-1, ids[:, n_prompt:, None])[..., 0]

    print("torch_grpo_peer: torch %s, transformers %s; %d threads, %s; %d tasks x %d, "
          "max %d tokens, kl_coef %g" % (torch.__version__, transformers.__version__, a.threads,
                                         a.compute, a.batch_tasks, G, a.max_tokens, a.kl_coef))
    steps = []
    gen_s = gen_tokens = 0
    for step in range(1, a.steps + 1):
        t0 = time.perf_counter()
        batch = [tasks[rng.randrange(len(tasks))] for _ in range(a.batch_tasks)]
        texts = [tok.apply_chat_template(
            ([{"role": "system", "content": a.system}] if a.system else []) +
            [{"role": "user", "content": t["prompt"]}], tokenize=False,
            add_generation_prompt=True) for t in batch]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        n_prompt = enc["input_ids"].shape[1]

        # 1. generate G per prompt with a KV cache
        tg = time.perf_counter()
        policy.eval()
        with torch.no_grad(), precision():
            seqs = policy.generate(**enc, do_sample=True, temperature=a.temperature, top_k=0,
                                   top_p=1.0, max_new_tokens=a.max_tokens,
                                   num_return_sequences=G, pad_token_id=pad, eos_token_id=eos)
        step_gen = time.perf_counter() - tg
        resp = seqs[:, n_prompt:]
        # the response mask: tokens up to and including the first EOS
        is_eos = resp == eos
        after = torch.cumsum(is_eos.int(), dim=1) - is_eos.int()
        mask = (after == 0).float()
        n_tok = int(mask.sum())
        gen_s += step_gen
        gen_tokens += n_tok

        # 2. rewards, 3. GRPO advantages
        answers = [t["answer"] for t in batch for _ in range(G)]
        responses = [tok.decode(r[m.bool()], skip_special_tokens=True) for r, m in zip(resp, mask)]
        r = torch.tensor(verify(a.tern, forms, answers, responses)).view(-1, G)
        adv = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-6)).view(-1)

        attn = torch.cat([enc["attention_mask"].repeat_interleave(G, 0), mask.long()], dim=1)
        # 4. score under the policy (no grad) and the reference
        with torch.no_grad(), precision():
            old = torch.cat([token_logps(policy, seqs[i:i + a.micro_batch],
                                         attn[i:i + a.micro_batch], n_prompt)
                             for i in range(0, seqs.shape[0], a.micro_batch)])
            ref = torch.cat([token_logps(reference, seqs[i:i + a.micro_batch],
                                         attn[i:i + a.micro_batch], n_prompt)
                             for i in range(0, seqs.shape[0], a.micro_batch)])

        # 5. PPO-clipped loss with the k3 KL, token-mean; AdamW
        policy.train()
        opt.zero_grad(set_to_none=True)
        for i in range(0, seqs.shape[0], a.micro_batch):
            sl = slice(i, i + a.micro_batch)
            with precision():
                logp = token_logps(policy, seqs[sl], attn[sl], n_prompt)
            ratio = torch.exp(logp - old[sl])
            A = adv[sl, None]
            pg = -torch.min(ratio * A, torch.clamp(ratio, 1 - a.clip, 1 + a.clip) * A)
            d = ref[sl] - logp
            kl = torch.exp(d) - d - 1  # k3
            loss = ((pg + a.kl_coef * kl) * mask[sl]).sum() / max(n_tok, 1)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        opt.step()
        dt = time.perf_counter() - t0
        steps.append(dt)
        print("step %d: %.2f s (generation %.2f s), %d response tokens, mean reward %.3f" %
              (step, dt, step_gen, n_tok, float(r.mean())), flush=True)

    timed = steps[1:] if len(steps) > 1 else steps
    res = {"torch_version": torch.__version__, "threads": a.threads, "compute": a.compute,
           "steps": a.steps, "s_per_step": sum(timed) / len(timed),
           "gen_tokens_per_s": gen_tokens / gen_s if gen_s else 0.0,
           "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    print("torch_grpo_peer: %.2f s per RL step (mean of steps 2..%d), generation %.1f tokens/s" %
          (res["s_per_step"], a.steps, res["gen_tokens_per_s"]))
    print("GRPO_JSON " + json.dumps(res))


if __name__ == "__main__":
    main()
