#!/opt/refenv/bin/python
"""torch_vlm_warmup.py: the vision warm-up of etc/examples/vision-shapes.cfg,
done in Hugging Face transformers, to tell tern's behaviour from the model's.

It loads a tern-made vlm-tiny directory (`tern model init --preset vlm-tiny
--seed 1 DIR`: LlavaForConditionalGeneration reads it with no missing or
unexpected weights), and trains it as tern's warm-up does (docs/config.md,
trainer.sft): each step 32 tasks drawn from TRAIN, the tokens BOS, 64 image
tokens (259), the bytes of "\n" + prompt, then the answer's bytes and EOS
(257), the mean negative log-likelihood of the answer and EOS tokens;
AdamW (betas 0.9, 0.95, weight decay 0.1) at LR, the gradient's norm
clipped to 1. Pixels: the PNG's bytes / 255, normalised with CLIP's mean and
std (the picture is already the encoder's 32 x 32). Every 100 steps it
prints greedy accuracy of the answer's first byte on EVAL, and every 25
the step's loss.

  bench/torch_vlm_warmup.py TRAIN.jsonl EVAL.jsonl MODEL_DIR LR STEPS

Measured (docs/rewards.md, "Counting shapes"): on the "How many shapes" tasks,
at LR 2e-3 the loss stays at 0.69 (the blind answer's entropy per token)
for 550 steps, as tern's does, and held-out accuracy at the blind level.
Needs torch and transformers (tern never does); numpy; no PIL (the PNG is
decoded here).
"""
import json
import os
import random
import struct
import sys
import time
import zlib

import numpy as np
import torch
from transformers import LlavaForConditionalGeneration

BOS, EOS, PAD, IMAGE = 256, 257, 258, 259
IMAGE_ROWS = 64  # 32 x 32 pixels in patches of 4
CLIP_MEAN = np.array([0.48145466, 0.4578275, 0.40821073])
CLIP_STD = np.array([0.26862954, 0.26130258, 0.27577711])


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def read_png(path):
    """An 8-bit RGB PNG (what `tern data shapes` writes) as [H, W, 3] uint8."""
    data = open(path, "rb").read()
    at, idat = 8, b""
    while at < len(data):
        (n,) = struct.unpack(">I", data[at:at + 4])
        kind, chunk = data[at + 4:at + 8], data[at + 8:at + 8 + n]
        if kind == b"IHDR":
            w, h = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        at += 12 + n
    raw = zlib.decompress(idat)
    stride, bpp = 3 * w, 3
    out = np.zeros((h, stride), np.uint8)
    prev = [0] * stride
    for y in range(h):
        filt, line = raw[y * (stride + 1)], raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)]
        cur = [0] * stride
        for x in range(stride):
            a = cur[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][filt]
            cur[x] = (line[x] + pred) & 255
        out[y] = cur
        prev = cur
    return out.reshape(h, w, 3)


def load_tasks(path):
    """pixel_values [N, 3, 32, 32], prompts, answers of a tasks file."""
    folder = os.path.dirname(path)
    pixels, prompts, answers = [], [], []
    for line in open(path):
        task = json.loads(line)
        rgb = read_png(os.path.join(folder, task["image"])) / 255.0
        pixels.append(((rgb - CLIP_MEAN) / CLIP_STD).transpose(2, 0, 1))
        prompts.append(task["prompt"])
        answers.append(task["answer"])
    return torch.tensor(np.array(pixels), dtype=torch.float32), prompts, answers


def prompt_tokens(prompt):
    """What tern feeds: BOS, the image rows, then "\n" + prompt as bytes."""
    return [BOS] + [IMAGE] * IMAGE_ROWS + list(("\n" + prompt).encode())


def make_batch(rows, tasks):
    """Right-padded ids, labels (-100 but on the answer and EOS), mask, pixels."""
    pixels, prompts, answers = tasks
    seqs, labels = [], []
    for i in rows:
        p = prompt_tokens(prompts[i])
        a = list(answers[i].encode()) + [EOS]
        seqs.append(p + a)
        labels.append([-100] * len(p) + a)
    n, width = len(rows), max(map(len, seqs))
    ids = torch.full((n, width), PAD)
    lab = torch.full((n, width), -100)
    mask = torch.zeros((n, width), dtype=torch.long)
    for j, (s, l) in enumerate(zip(seqs, labels)):
        ids[j, :len(s)] = torch.tensor(s)
        lab[j, :len(l)] = torch.tensor(l)
        mask[j, :len(s)] = 1
    return ids, lab, mask, pixels[list(rows)]


def accuracy(model, tasks):
    """Greedy: is the most likely first answer byte the answer's first?"""
    _, prompts, answers = tasks
    right = 0
    with torch.no_grad():
        for start in range(0, len(prompts), 64):
            rows = list(range(start, min(start + 64, len(prompts))))
            ids, _, mask, px = make_batch(rows, tasks)
            logits = model(input_ids=ids, attention_mask=mask, pixel_values=px).logits
            for j, i in enumerate(rows):
                last = len(prompt_tokens(prompts[i])) - 1
                right += int(logits[j, last].argmax()) == answers[i].encode()[0]
    return right / len(prompts)


def main():
    train_path, eval_path, model_dir, lr, steps = sys.argv[1:6]
    torch.set_num_threads(1)
    train, held_out = load_tasks(train_path), load_tasks(eval_path)
    print(f"{len(train[1])} training tasks, {len(held_out[1])} held out", flush=True)
    model = LlavaForConditionalGeneration.from_pretrained(model_dir)
    opt = torch.optim.AdamW(model.parameters(), lr=float(lr), betas=(0.9, 0.95),
                            weight_decay=0.1)
    rng, t0 = random.Random(0), time.time()
    for step in range(int(steps) + 1):
        if step % 100 == 0:
            print(f"step {step}: held-out accuracy {accuracy(model, held_out):.3f} "
                  f"({time.time() - t0:.0f} s)", flush=True)
        ids, lab, mask, px = make_batch(rng.sample(range(len(train[1])), 32), train)
        loss = model(input_ids=ids, attention_mask=mask, pixel_values=px, labels=lab).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 25 == 0:
            print(f"step {step}: loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
