"""serve_load.py URL [--clients 32] [--requests 4] [--max-tokens 64] [--prompts FILE]:
OpenAI chat clients at once against a server, each sending its requests one
after the other (standard library only, so tern serve and its peer get the
same load). Prints one JSON line: requests/s, generated tokens/s (the
servers' own usage.completion_tokens), p50 and p99 latency.

The prompts are the tasks' questions of FILE (a tern tasks JSON Lines file),
dealt round-robin; every request asks max_tokens at temperature 1 with a
seed of its own (the servers sample, not decode greedily, as a rollout does).
"""
import argparse
import json
import threading
import time
import urllib.request


def post(url, body):
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer bench"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        return json.load(r)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("url", help="the server's /v1 URL")
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--requests", type=int, default=4, help="per client")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--model", default="model")
    p.add_argument("--prompts", required=True)
    a = p.parse_args()
    prompts = [json.loads(l)["prompt"] for l in open(a.prompts) if l.strip()]
    lat, tokens, errors = [], [0], []
    lock = threading.Lock()

    def client(c):
        for k in range(a.requests):
            i = c * a.requests + k
            body = {"model": a.model, "max_tokens": a.max_tokens, "temperature": 1.0,
                    "seed": i, "messages": [{"role": "user",
                                             "content": prompts[i % len(prompts)]}]}
            t0 = time.monotonic()
            try:
                r = post(a.url, body)
            except Exception as e:  # a failed request is counted, not hidden
                with lock:
                    errors.append(str(e))
                continue
            dt = time.monotonic() - t0
            with lock:
                lat.append(dt)
                tokens[0] += r["usage"]["completion_tokens"]

    # one request first, not timed: the model's first call (lazy allocations)
    post(a.url, {"model": a.model, "max_tokens": 4,
                 "messages": [{"role": "user", "content": prompts[0]}]})
    threads = [threading.Thread(target=client, args=(c,)) for c in range(a.clients)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    lat.sort()

    def pct(q):
        return lat[min(len(lat) - 1, int(q * len(lat)))] if lat else float("nan")

    print(json.dumps({"clients": a.clients, "requests": len(lat), "failed": len(errors),
                      "first_error": errors[0] if errors else None, "seconds": wall,
                      "requests_per_s": len(lat) / wall, "tokens": tokens[0],
                      "tokens_per_s": tokens[0] / wall, "p50_s": pct(0.5), "p99_s": pct(0.99)}))


if __name__ == "__main__":
    main()
