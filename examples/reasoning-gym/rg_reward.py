"""A tern reward (the `python` plugin) that scores a response with the
reasoning-gym dataset's own score_answer, on the entry rg_tasks.py made the
task from.

The answer scored is what the response holds within <answer></answer> when
it has those tags (reasoning-gym's own convention, its extract_answer),
else, as the task says (rg_tasks.py --answer-from), the response's last
line that is not blank or its last number. The reward is the score (0 to
1); a score of 1 is right (the accuracy).
"""
import functools
import json
import re

import reasoning_gym
from reasoning_gym.utils import extract_answer


@functools.lru_cache(maxsize=16)
def dataset(name, config, size, seed):
    return reasoning_gym.create_dataset(name, size=size, seed=seed, **json.loads(config))


def answer_of(response, where):
    tagged = extract_answer(response)
    if tagged is not None:
        return tagged
    if where == "last_number":
        numbers = re.findall(r"-?\d+(?:\.\d+)?", response)
        return numbers[-1] if numbers else ""
    lines = [line.strip() for line in response.strip().split("\n") if line.strip()]
    return lines[-1] if lines else ""


def reward(response, task):
    g = task["reasoning_gym"]
    ds = dataset(g["dataset"], json.dumps(g.get("config", {}), sort_keys=True), g["size"],
                 g["seed"])
    answer = answer_of(response, g.get("answer_from", "last_line"))
    score = float(ds.score_answer(answer, ds[g["index"]]))
    return {"reward": score, "components": {"accuracy": score >= 1.0}}
