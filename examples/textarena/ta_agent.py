"""One textarena game, played by textarena's own OpenAIAgent against tern's
endpoint: tern runs it once per trajectory, the task (a ta_tasks.py line) on
stdin and OPENAI_BASE_URL set to the trajectory's own endpoint, and trains
the policy on the tokens its calls sampled.

The game and the agent are textarena's, unchanged: the agent sends each
turn as a new conversation (its system prompt and the game's observation so
far), so each call after the first is a sequence of its own in tern's terms
(docs/agents.md, "Workflows"). The last line printed is the reward the game
gave player 0 (GuessTheNumber: 1 for the number found, else how near the
last guess came, from 0 to 1).
"""
import json
import os
import sys

import textarena as ta

# a call's tokens at most (tern's explorer.max_tokens bounds them as well)
MAX_TOKENS = int(os.environ.get("TA_MAX_TOKENS", "24"))


def main():
    task = json.loads(sys.stdin.readline())
    game = task["textarena"]
    env = ta.make(env_id=game["env_id"], **game.get("env_args", {}))
    env.reset(num_players=1, seed=game["seed"])
    agent = ta.agents.OpenAIAgent(model_name=os.environ.get("TERN_MODEL", "policy"),
                                  base_url=os.environ["OPENAI_BASE_URL"],
                                  max_tokens=MAX_TOKENS)
    done = False
    first = True
    while not done:
        player, observation = env.get_observation()
        if first and observation != task["prompt"]:
            # the group's programs must start alike: a game whose first
            # observation is not the task's is another game than ta_tasks.py made
            sys.exit("ta_agent.py: game %s's first observation is not the task's prompt "
                     "(another textarena version?): write the tasks again with ta_tasks.py"
                     % task.get("id"))
        first = False
        done, info = env.step(action=agent(observation))
    rewards, game_info = env.close()
    print(json.dumps({"reward": float(rewards[0])}))


if __name__ == "__main__":
    main()
