"""textarena's games as tern tasks (JSON Lines), for ta_agent.py.

    python ta_tasks.py ENV_ID [--env-args '{"max_turns": 4}'] [--train 200]
                       [--eval 50] [--seed 1] --out DIR

writes DIR/train.jsonl and DIR/eval.jsonl: one game per line, under
"textarena" the environment's id, its arguments and the game's seed
(textarena's single-player games are deterministic in it), and as "prompt"
and "system" what textarena's OpenAIAgent sends first: the game's first
observation and the agent's system prompt. tern takes the group's prompt
from the programs' first calls; the task's copy shows what it is. The eval
games are seeded apart from the training ones.
"""
import argparse
import json
import os
import sys

import textarena as ta
from textarena.agents.basic_agents import STANDARD_GAME_PROMPT


def first_observation(env_id, env_args, seed):
    env = ta.make(env_id=env_id, **env_args)
    env.reset(num_players=1, seed=seed)
    player, observation = env.get_observation()
    env.close()
    return observation


def write(path, env_id, env_args, count, seed, split):
    with open(path, "w") as f:
        for i in range(count):
            game_seed = seed + i
            task = {"id": "%s-%s-%05d" % (env_id, split, i),
                    "domain": "textarena",
                    "prompt": first_observation(env_id, env_args, game_seed),
                    "system": STANDARD_GAME_PROMPT,
                    "answer": "",  # the game judges: no gold answer
                    "textarena": {"env_id": env_id, "env_args": env_args, "seed": game_seed}}
            f.write(json.dumps(task) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("env_id", help="a single-player textarena game, e.g. GuessTheNumber-v0")
    p.add_argument("--env-args", default="{}", help="the game's arguments, as JSON")
    p.add_argument("--train", type=int, default=200, help="training games")
    p.add_argument("--eval", type=int, default=50, help="evaluation games")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", required=True, help="the folder to write into")
    a = p.parse_args()
    try:
        env_args = json.loads(a.env_args)
    except json.JSONDecodeError as e:
        sys.exit("ta_tasks.py: --env-args is not JSON: %s" % e)
    if a.env_id not in ta.envs.registration.ENV_REGISTRY:
        sys.exit("ta_tasks.py: textarena has no environment '%s'" % a.env_id)
    os.makedirs(a.out, exist_ok=True)
    write(os.path.join(a.out, "train.jsonl"), a.env_id, env_args, a.train, a.seed, "train")
    write(os.path.join(a.out, "eval.jsonl"), a.env_id, env_args, a.eval, a.seed + 1000003,
          "eval")


if __name__ == "__main__":
    main()
