"""The agent tests/cli/test_workflow_run.c runs as a workflow: standard
library only (the openai package is examples/workflow-openai's), one mode
per run, named by its first argument.

  chat     three calls, each continuing the last (its answer sent back as
           the server gave it, then a user turn "next K"); logs each call's
           usage to calls.jsonl; reward: the last answer's length mod 3
  rewrite  a call, then one that starts over (a new conversation), then
           one that continues that one; logs each call's usage to
           calls.jsonl; reward: the last answer's length mod 3
  fail     the i-th program of the run (concurrency 1: they run in order)
           does the i-th of: crash, exit 3, hang, print no reward, call
           nothing, succeed
"""
import json
import os
import signal
import sys
import time
import urllib.request

BASE = os.environ["OPENAI_BASE_URL"]


def chat(messages):
    body = json.dumps({"model": "gpt-4o-mini", "messages": messages,
                       "temperature": 0.3, "max_tokens": 64}).encode()
    req = urllib.request.Request(BASE + "/chat/completions", data=body,
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " +
                                          os.environ["OPENAI_API_KEY"]})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def log(reply):
    with open("calls.jsonl", "a") as f:
        f.write(json.dumps({"seed": os.environ["TERN_SEED"],
                            "usage": reply["usage"]}) + "\n")


def main():
    task = json.loads(sys.stdin.readline())
    mode = sys.argv[1]
    msgs = [{"role": "user", "content": task["prompt"]}]
    if mode == "chat":
        for k in range(3):
            reply = chat(msgs)
            log(reply)
            msgs.append(reply["choices"][0]["message"])
            msgs.append({"role": "user", "content": "next %d" % k})
        text = reply["choices"][0]["message"]["content"] or ""
        print(json.dumps({"reward": float(len(text) % 3)}))
    elif mode == "rewrite":
        log(chat(msgs))
        again = [{"role": "user", "content": "start again: " + task["prompt"]}]
        reply = chat(again)
        log(reply)
        again += [reply["choices"][0]["message"], {"role": "user", "content": "next 0"}]
        reply = chat(again)
        log(reply)
        text = reply["choices"][0]["message"]["content"] or ""
        print(json.dumps({"reward": float(len(text) % 3)}))
    elif mode == "fail":
        with open("count", "a+") as f:
            f.seek(0)
            i = len(f.read())
            f.write("x")
        what = ["crash", "exit", "hang", "garbage", "nocall", "ok"][i % 6]
        if what != "nocall":
            chat(msgs)
        if what == "crash":
            sys.stderr.write("about to crash\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGSEGV)
        elif what == "exit":
            sys.stderr.write("Traceback: ValueError: the agent gave up\n")
            sys.exit(3)
        elif what == "hang":
            time.sleep(60)
        elif what == "garbage":
            print("the answer is 42")
        else:
            print(json.dumps({"reward": 0.5}))


main()
