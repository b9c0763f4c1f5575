"""reasoning-gym's datasets as tern tasks (JSON Lines).

    python rg_tasks.py DATASET [--config '{"key": value}'] [--train 400]
                       [--eval 100] [--seed 1] [--answer-from last_line] --out DIR

writes DIR/train.jsonl and DIR/eval.jsonl: one task per line, its prompt
the entry's question and its answer the entry's answer, and under
"reasoning_gym" what rg_reward.py needs to score a response with the
dataset's own score_answer: the dataset's name, config, size, seed and the
entry's index (the entry is made again from them: reasoning-gym's datasets
are deterministic in their seed), and where in a response its answer is
(--answer-from, rg_reward.py). The eval split is a dataset of its own,
seeded apart from the training one.
"""
import argparse
import json
import os
import sys

import reasoning_gym


def write(path, name, config, size, seed, split, answer_from):
    ds = reasoning_gym.create_dataset(name, size=size, seed=seed, **config)
    with open(path, "w") as f:
        for i in range(size):
            entry = ds[i]
            task = {"id": "%s-%s-%05d" % (name, split, i),
                    "domain": "reasoning_gym",
                    "prompt": entry["question"],
                    "answer": str(entry["answer"]),
                    "reasoning_gym": {"dataset": name, "config": config, "size": size,
                                      "seed": seed, "index": i,
                                      "answer_from": answer_from}}
            f.write(json.dumps(task) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dataset", help="a reasoning-gym dataset, e.g. chain_sum")
    p.add_argument("--config", default="{}", help="the dataset's settings, as JSON")
    p.add_argument("--train", type=int, default=400, help="training tasks")
    p.add_argument("--eval", type=int, default=100, help="evaluation tasks")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--answer-from", choices=["last_line", "last_number"], default="last_line",
                   help="where a response's answer is when it has no <answer> tags: its "
                        "last line (the default), or its last number (for numeric tasks)")
    p.add_argument("--out", required=True, help="the folder to write into")
    a = p.parse_args()
    try:
        config = json.loads(a.config)
    except json.JSONDecodeError as e:
        sys.exit("rg_tasks.py: --config is not JSON: %s" % e)
    if a.dataset not in reasoning_gym.factory.DATASETS:
        sys.exit("rg_tasks.py: reasoning-gym has no dataset '%s' (it has: %s)"
                 % (a.dataset, ", ".join(sorted(reasoning_gym.factory.DATASETS))))
    os.makedirs(a.out, exist_ok=True)
    write(os.path.join(a.out, "train.jsonl"), a.dataset, config, a.train, a.seed, "train",
          a.answer_from)
    write(os.path.join(a.out, "eval.jsonl"), a.dataset, config, a.eval, a.seed + 1000003,
          "eval", a.answer_from)
    print("%s: %d training and %d eval tasks of %s" % (a.out, a.train, a.eval, a.dataset))


if __name__ == "__main__":
    main()
