"""A two-attempt arithmetic agent, written against the OpenAI API with the
real `openai` client and nothing of tern's: tern runs it once per
trajectory, its task (a JSON line) on stdin and OPENAI_BASE_URL set to that
trajectory's own endpoint, and trains the policy on exactly the tokens its
calls sampled.

It asks the task's question; a wrong answer is told so and gets a second
try. The last line it prints is the trajectory's reward: 1 for a right first
answer, 0.5 for a right second one, 0 otherwise.
"""
import json
import os
import re
import sys

from openai import OpenAI

SYSTEM = "Answer with the computation and its result on one line, like: 3 + 4 = 7"


def right(text, answer):
    """The last number of the answer's first line is the task's answer."""
    line = text.strip().split("\n")[0] if text.strip() else ""
    numbers = re.findall(r"-?\d+", line)
    return bool(numbers) and numbers[-1] == str(answer)


def main():
    task = json.loads(sys.stdin.readline())
    client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY come from tern
    model = os.environ.get("TERN_MODEL", "policy")
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": task["prompt"]}]
    for attempt in range(2):
        reply = client.chat.completions.create(model=model, messages=messages,
                                               max_tokens=32)
        text = reply.choices[0].message.content or ""
        if right(text, task["answer"]):
            print(json.dumps({"reward": 1.0 if attempt == 0 else 0.5}))
            return
        # the answer goes back as the server gave it: tern appends the next
        # turn to the ids it sampled, token for token
        messages.append({"role": "assistant", "content": text})
        messages.append({"role": "user",
                         "content": "That is not right. Give the computation and its "
                                    "result again, on one line."})
    print(json.dumps({"reward": 0.0}))


if __name__ == "__main__":
    main()
