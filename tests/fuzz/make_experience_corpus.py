#!/usr/bin/env python3
"""Writes the seed records of the experience decoder's fuzz target
(tests/fuzz/corpus_experience/): valid format-2 experiences of a few shapes,
encoded as core/src/experience/experience.h lays them out.

    python3 tests/fuzz/make_experience_corpus.py
"""
import os
import struct


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def record(batch, version, domain, task_id, parts, prompt, response, logp):
    body = struct.pack("<qqIIIIdddQQIIHHHH", batch, version, 7, 1, 2, 1, 0.5, 1.0,
                       float("nan"), 1795000000 * 10**9, 1795000001 * 10**9,
                       len(prompt), len(response), len(domain), len(task_id), len(parts), 0)
    body += domain + task_id
    for name, value in parts:
        body += struct.pack("<B", len(name)) + name + struct.pack("<d", value)
    body += struct.pack("<%di" % (len(prompt) + len(response)), *(prompt + response))
    body += struct.pack("<%df" % len(logp), *logp)
    total = 16 + len(body)
    return struct.pack("<4sIII", b"TXP1", 2, total, crc32c(body)) + body


here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_experience")
os.makedirs(here, exist_ok=True)
seeds = {
    "empty.bin": record(0, 0, b"", b"", [], [], [], []),
    "math.bin": record(12, 11, b"math", b"gsm8k-42", [(b"accuracy", 1.0), (b"format", 0.0)],
                       [1, 2, 3, 4], [5, 6, 2], [-0.5, -1.25, -0.01]),
    "long.bin": record(3, 0, b"code", b"x" * 40, [(b"tests_passed", 0.75)],
                       list(range(64)), list(range(100, 164)), [-0.1] * 64),
}
for name, data in seeds.items():
    with open(os.path.join(here, name), "wb") as f:
        f.write(data)
    print(name, len(data), "bytes")
