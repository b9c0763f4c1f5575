#!/usr/bin/env python3
"""The peer verifier's speed on the math reward's corpus: Hugging Face
math-verify (PyPI `math-verify`) judging every case of a corpus file
(tests/corpora/math.jsonl by default: {"answer", "response"} lines) as its
own tests do, LaTeX and plain expressions, 6 digits of rounding. Prints
cases per second on one thread, for bench/run_math_peer.sh to set beside
bench_rewards' figure for tern's `math` plugin.

    math_peer_speed.py [CORPUS] [--seconds S]
"""
import argparse
import json
import time

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

ap = argparse.ArgumentParser()
ap.add_argument("corpus", nargs="?", default="tests/corpora/math.jsonl")
ap.add_argument("--seconds", type=float, default=5.0)
args = ap.parse_args()
cases = [json.loads(line) for line in open(args.corpus) if line.strip()]
cases = [(str(c["answer"]), c["response"]) for c in cases if "response" in c]
targets = [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]
done, start = 0, time.perf_counter()
while time.perf_counter() - start < args.seconds:
    for gold, response in cases:
        try:
            verify(parse(gold, targets), parse(response, targets), float_rounding=6)
        except Exception:
            pass  # a case the peer fails on still took its time
        done += 1
elapsed = time.perf_counter() - start
print(f"math-verify: {done} verdicts in {elapsed:.1f} s, {done / elapsed:.0f} cases/s "
      f"(1 thread, {len(cases)} cases of {args.corpus})")
