#!/usr/bin/env python3
"""Writes the seed records of the experience decoder's fuzz target
(tests/fuzz/corpus_experience/): valid format-5 groups of a few shapes (one
with an image's path and digest, one with multi-turn trajectories, one whose
workflow call started over: a prompt segment), encoded as
core/src/experience/experience.h lays them out, one format-4 group (before
trajectories) and one format-3 group (before images), still read, and one
format-2 record (one response, as an older tern wrote it) that the decoder
refuses.

    python3 tests/fuzz/make_experience_corpus.py
"""
import math
import os
import struct


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def stats(responses):
    """reward mean, population std, accuracy mean: the decoder's order and
    operations (Python floats are IEEE doubles, so the same bits)."""
    g = float(len(responses))
    s = sq = acc = 0.0
    for r in responses:
        s += r["reward"]
        sq += r["reward"] * r["reward"]
        acc += r["accuracy"]
    mean = s / g
    var = sq / g - mean * mean
    return mean, math.sqrt(var if var > 0 else 0.0), acc / g


def response(version, finish, failure, reward, accuracy, parts, tokens, logp, segments=None,
             turns=(), end=0, env_failure=0):
    """segments: [(tokens, kind 1 model / 2 context / 3 prompt, version)]; None: one model
    segment of every token at `version` (a one-answer response)."""
    if segments is None:
        segments = [(len(tokens), 1, version)]
    return dict(version=version, finish=finish, failure=failure, reward=reward,
                accuracy=accuracy, parts=parts, tokens=tokens, logp=logp, segments=segments,
                turns=list(turns), end=end, env_failure=env_failure)


def group(batch, version, domain, task_id, prompt, responses, image=b"", digest=b"",
          fmt=5):
    mean, std, acc = stats(responses)
    body = struct.pack("<qqIIIIQQdddHHHH", batch, version, 7, 1, len(responses), len(prompt),
                       1795000000 * 10**9, 1795000001 * 10**9, mean, std, acc,
                       len(domain), len(task_id), len(image), 0)
    body += domain + task_id
    if image:
        body += image + digest
    body += struct.pack("<%di" % len(prompt), *prompt)
    for r in responses:
        body += struct.pack("<qIHHddH", r["version"], len(r["tokens"]), r["finish"],
                            r["failure"], r["reward"], r["accuracy"], len(r["parts"]))
        for name, value in r["parts"]:
            body += struct.pack("<B", len(name)) + name + struct.pack("<d", value)
        body += struct.pack("<%di" % len(r["tokens"]), *r["tokens"])
        body += struct.pack("<%df" % len(r["logp"]), *r["logp"])
        if fmt >= 5:
            body += struct.pack("<HHHH", len(r["segments"]), len(r["turns"]), r["end"],
                                r["env_failure"])
            for n, kind, version in r["segments"]:
                body += struct.pack("<IIq", n, kind, version)
            body += struct.pack("<%dd" % len(r["turns"]), *r["turns"])
    total = 16 + len(body)
    return struct.pack("<4sIII", b"TXP1", fmt, total, crc32c(body)) + body


def format2(domain, task_id, prompt, response, logp):
    """One response as format 2 laid it out (104-byte header)."""
    body = struct.pack("<qqIIIIdddQQIIHHHH", 3, 2, 7, 1, 2, 1, 0.5, 1.0, float("nan"),
                       1795000000 * 10**9, 1795000001 * 10**9, len(prompt), len(response),
                       len(domain), len(task_id), 0, 0)
    body += domain + task_id
    body += struct.pack("<%di" % (len(prompt) + len(response)), *(prompt + response))
    body += struct.pack("<%df" % len(logp), *logp)
    return struct.pack("<4sIII", b"TXP1", 2, 16 + len(body), crc32c(body)) + body


math_group = [
    response(11, 1, 0, 1.0, 1.0, [(b"accuracy", 1.0), (b"format", 0.0)], [5, 6, 2],
             [-0.5, -1.25, -0.01]),
    response(11, 2, 0, 0.0, 0.0, [(b"accuracy", 0.0), (b"format", 0.0)], [7, 8, 9, 10],
             [-0.25, -0.75, -2.0, -0.125]),
    response(10, 1, 4, 0.0, 0.0, [], [], []),
    response(11, 1, 0, 0.5, 0.0, [(b"format", 0.5)], [1], [-3.0]),
]
code_group = [
    response(3, 1 + i % 2, 0, 0.1 * i - 0.3, float(i % 2), [(b"tests_passed", 0.125 * i)],
             list(range(100 * i, 100 * i + 24)), [-0.0625 * k for k in range(24)])
    for i in range(8)
]
# a game of three turns (model, observation, model, observation, model),
# one that its environment ended early, one cut short by max_turns
agent_group = [
    response(4, 1, 0, 1.0, 1.0, [], [5, 2, 90, 91, 92, 6, 2, 93, 94, 7, 2],
             [-0.5, -0.01, 0, 0, 0, -0.75, -0.02, 0, 0, -0.1, -0.03],
             segments=[(2, 1, 4), (3, 2, 4), (2, 1, 4), (2, 2, 4), (2, 1, 5)],
             turns=[0.0, 0.0, 1.0], end=1),
    response(4, 1, 0, 0.0, 0.0, [], [8, 2], [-1.0, -0.05], segments=[(2, 1, 4)], turns=[0.0],
             end=4, env_failure=3),
    response(4, 2, 0, 0.0, 0.0, [], [9, 95, 10], [-2.0, 0, -1.5],
             segments=[(1, 1, 4), (1, 2, 4), (1, 1, 4)], turns=[0.0, 0.0], end=2),
]

# a workflow of two calls, the second of which rewrote the history: its
# prompt is a sequence of its own (kind 3), never first or last
restart_group = [
    response(6, 1, 0, 1.0, 1.0, [], [5, 2, 80, 81, 82, 83, 6, 7, 2],
             [-0.5, -0.01, 0, 0, 0, 0, -0.75, -0.25, -0.02],
             segments=[(2, 1, 6), (4, 3, 6), (3, 1, 6)], turns=[0.0, 1.0], end=1),
    response(6, 2, 0, 0.0, 0.0, [], [9, 10], [-2.0, -1.5], segments=[(2, 1, 6)],
             turns=[0.0], end=2),
]

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_experience")
os.makedirs(here, exist_ok=True)
for old in os.listdir(here):
    os.remove(os.path.join(here, old))
seeds = {
    "one.bin": group(0, 0, b"", b"", [], [response(0, 1, 0, 0.0, 0.0, [], [], [])]),
    "math.bin": group(12, 11, b"math", b"gsm8k-42", [1, 2, 3, 4], math_group),
    "code8.bin": group(3, 2, b"code", b"x" * 40, list(range(32)), code_group),
    "image.bin": group(5, 5, b"vision", b"shapes-00001-counting", [1, 258, 258, 258, 258, 9],
                       math_group, b"data/shapes/images/shape-00001.png", bytes(range(32))),
    "agent.bin": group(4, 4, b"game", b"guess-7", [1, 2, 3], agent_group),
    "restart.bin": group(6, 6, b"agent", b"workflow-3", [1, 2, 3], restart_group),
    "format4.bin": group(12, 11, b"math", b"gsm8k-42", [1, 2, 3, 4], math_group, fmt=4),
    "format3.bin": group(12, 11, b"math", b"gsm8k-42", [1, 2, 3, 4], math_group, fmt=3),
    "format2.bin": format2(b"math", b"gsm8k-42", [1, 2, 3], [5, 6], [-0.5, -1.25]),
}
for name, data in seeds.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(data)
    print(name, len(data), "bytes")
