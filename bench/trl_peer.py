#!/usr/bin/env python3
"""trl_peer.py: the peer of tern's real-model RL example, TRL's GRPOTrainer.

Runs what a user of the Python stack would run instead of
etc/examples/smollm2-arith.cfg: TRL's GRPOTrainer (transformers generation,
no vLLM, on the CPU) fine-tuning SmolLM2-135M-Instruct on the same tasks,
with the same group size, lengths, learning rate, loss and reward:

  model      the Hugging Face directory `tern model convert` writes from the
             GGUF file (the same float32 weights, tokenizer and chat template
             tern loads)
  prompts    each task's prompt as the user turn after the system prompt,
             through the model's chat template (TRL's conversational format)
  reward     tern's math verifier itself (`tern reward score --plugin math`
             with the same answer_forms), so both sides judge alike
  algorithm  GRPO advantages (group mean and std), PPO clip 0.2, one update
             per batch, no KL term (beta 0, no reference model), token-mean
             loss (TRL's loss_type "dapo"), AdamW (betas 0.9 and 0.99, eps
             1e-8: tern's defaults) at a constant learning rate with weight
             decay 0 and gradient clipping at 1.0
  batch      batch_tasks prompts x group_size completions a step (TRL:
             per_device_train_batch_size x gradient_accumulation_steps =
             batch_tasks x group_size, num_generations = group_size),
             max_completion_length = max_tokens, temperature 1

It measures seconds per RL step (each optimiser step, generation included),
the generation tokens/s (completion tokens over the time spent in
model.generate), greedy accuracy on the eval tasks before and after (the
same verifier), and the process's peak RSS. torch runs on --threads threads
(both of this machine's cores by default) in float32, as tern's example.
Prints human-readable lines and a final line `TRL_JSON {...}`.

  python3 bench/trl_peer.py --model DIR --train T.jsonl --eval E.jsonl \\
      --system "..." --steps 20 --tern build/bin/tern

Needs torch, transformers, trl, datasets (PyPI); bench/run_trl.sh runs it
beside tern and prints the comparison.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def load_tasks(path, limit=None):
    tasks = []
    with open(path) as f:
        for line in f:
            if line.strip():
                tasks.append(json.loads(line))
    return tasks[:limit] if limit else tasks


class Verifier:
    """tern's math reward, one `tern reward score` call per batch."""

    def __init__(self, tern, forms):
        self.cmd = [tern, "reward", "score", "--plugin", "math", "-o",
                    "answer_forms=" + json.dumps(forms)]
        self.seconds = 0.0

    def __call__(self, answers, responses):
        t0 = time.perf_counter()
        lines = "".join(json.dumps({"answer": a, "response": r}) + "\n"
                        for a, r in zip(answers, responses))
        out = subprocess.run(self.cmd, input=lines, capture_output=True, text=True)
        if out.returncode not in (0, 1):
            sys.exit("trl_peer: %s failed: %s" % (" ".join(self.cmd), out.stderr))
        rewards = [float(json.loads(l).get("reward", 0.0)) for l in out.stdout.splitlines()
                   if l.strip()]
        if len(rewards) != len(responses):
            sys.exit("trl_peer: the verifier gave %d verdicts for %d responses" %
                     (len(rewards), len(responses)))
        self.seconds += time.perf_counter() - t0
        return rewards


def messages(system, prompt):
    m = [{"role": "system", "content": system}] if system else []
    return m + [{"role": "user", "content": prompt}]


def greedy_accuracy(model, tok, tasks, system, max_tokens, verify, batch=50):
    import torch
    tok.padding_side = "left"
    responses = []
    for i in range(0, len(tasks), batch):
        chunk = tasks[i:i + batch]
        texts = [tok.apply_chat_template(messages(system, t["prompt"]), tokenize=False,
                                         add_generation_prompt=True) for t in chunk]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(**enc, max_new_tokens=max_tokens, do_sample=False,
                                 pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        for row in out[:, enc["input_ids"].shape[1]:]:
            responses.append(tok.decode(row, skip_special_tokens=True))
    rewards = verify([t["answer"] for t in tasks], responses)
    return sum(1 for r in rewards if r > 0) / len(tasks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="Hugging Face directory (tern model convert)")
    ap.add_argument("--train", required=True)
    ap.add_argument("--eval", required=True)
    ap.add_argument("--eval-tasks", type=int, default=200)
    ap.add_argument("--system", default="")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-tasks", type=int, default=8)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--micro-batch", type=int, default=16,
                    help="completions per forward/backward (gradient accumulation)")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--answer-forms", default='["answer_is", "final_line"]')
    ap.add_argument("--tern", default="build/bin/tern")
    ap.add_argument("--out-dir", default=None, help="TRL's output_dir (default: a temp dir)")
    a = ap.parse_args()

    import tempfile

    import datasets
    import torch
    import transformers
    import trl
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    verify = Verifier(a.tern, json.loads(a.answer_forms))
    tok = AutoTokenizer.from_pretrained(a.model)
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32)
    train = load_tasks(a.train)
    evals = load_tasks(a.eval, a.eval_tasks)
    print("trl_peer: torch %s, transformers %s, trl %s, datasets %s; %d threads" %
          (torch.__version__, transformers.__version__, trl.__version__, datasets.__version__,
           a.threads))

    t0 = time.perf_counter()
    before = greedy_accuracy(model, tok, evals, a.system, a.max_tokens, verify)
    eval_s = time.perf_counter() - t0
    print("trl_peer: greedy accuracy before RL %.3f on %d eval tasks (%.1f s)" %
          (before, len(evals), eval_s))

    # generation, timed where TRL calls it
    gen = {"seconds": 0.0, "tokens": 0}
    inner_generate = model.generate

    def timed_generate(*args, **kw):
        t = time.perf_counter()
        out = inner_generate(*args, **kw)
        gen["seconds"] += time.perf_counter() - t
        ids = kw.get("input_ids", args[0] if args else None)
        seqs = out.sequences if hasattr(out, "sequences") else out
        new = seqs[:, ids.shape[1]:] if ids is not None else seqs
        eos = tok.eos_token_id
        # tokens up to and including the first EOS (pad after it is not generated work)
        for row in new.tolist():
            gen["tokens"] += row.index(eos) + 1 if eos in row else len(row)
        return out
    model.generate = timed_generate

    ds = datasets.Dataset.from_list([{"prompt": messages(a.system, t["prompt"]),
                                      "answer": t["answer"]} for t in train])

    def reward(prompts, completions, answer, **kw):
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        return verify(answer, texts)

    per_step = a.batch_tasks * a.group_size
    micro = min(a.micro_batch, per_step)
    if per_step % micro or micro % a.group_size and a.group_size % micro:
        sys.exit("trl_peer: --micro-batch must divide batch_tasks x group_size")
    cfg = GRPOConfig(
        output_dir=a.out_dir or tempfile.mkdtemp(prefix="trl_peer_"),
        learning_rate=a.lr, lr_scheduler_type="constant", weight_decay=0.0, max_grad_norm=1.0,
        optim="adamw_torch", adam_beta1=0.9, adam_beta2=0.99, adam_epsilon=1e-8,
        per_device_train_batch_size=micro, gradient_accumulation_steps=per_step // micro,
        num_generations=a.group_size, max_completion_length=a.max_tokens,
        temperature=a.temperature, top_p=1.0, top_k=0, beta=0.0, epsilon=0.2,
        num_iterations=1, loss_type="dapo", scale_rewards="group", max_steps=a.steps,
        logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, bf16=False,
        seed=a.seed, dataloader_num_workers=0, disable_tqdm=True)

    steps = []

    class StepTimer(TrainerCallback):
        # from one optimiser step's end to the next (on_step_end comes once per
        # optimiser step, whatever the gradient accumulation)
        def on_train_begin(self, args, state, control, **kw):
            self.t = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            now = time.perf_counter()
            steps.append(now - self.t)
            self.t = now
            print("trl_peer: step %d/%d in %.1f s" % (state.global_step, a.steps, steps[-1]),
                  flush=True)

    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=cfg, train_dataset=ds,
                          processing_class=tok, callbacks=[StepTimer()])
    t0 = time.perf_counter()
    trainer.train()
    train_s = time.perf_counter() - t0
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h]

    model.generate = inner_generate
    after = greedy_accuracy(model, tok, evals, a.system, a.max_tokens, verify)
    print("trl_peer: greedy accuracy after %d steps %.3f (%+.1f points)" %
          (a.steps, after, 100 * (after - before)))
    # TRL's first step pays one-off set-up; the mean over the rest is the rate
    rate = steps[1:] if len(steps) > 1 else steps
    res = {"steps": a.steps, "seconds_per_step": sum(rate) / len(rate),
           "step_seconds": steps, "train_seconds": train_s,
           "gen_tokens": gen["tokens"], "gen_seconds": gen["seconds"],
           "gen_tokens_per_s": gen["tokens"] / gen["seconds"] if gen["seconds"] else 0.0,
           "accuracy_before": before, "accuracy_after": after,
           "reward_first_step": rewards[0] if rewards else None,
           "reward_last_step": rewards[-1] if rewards else None,
           "verifier_seconds": verify.seconds,
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
           "threads": a.threads,
           "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                        "trl": trl.__version__, "datasets": datasets.__version__,
                        "python": sys.version.split()[0]}}
    print("trl_peer: %.2f s per RL step (mean of steps 2..%d), generation %.1f tokens/s, "
          "peak RSS %.0f MiB" % (res["seconds_per_step"], a.steps, res["gen_tokens_per_s"],
                                 res["peak_rss_mib"]))
    print("TRL_JSON " + json.dumps(res))


if __name__ == "__main__":
    main()
