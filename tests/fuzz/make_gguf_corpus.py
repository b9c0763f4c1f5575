#!/usr/bin/env python3
"""Write the seed inputs of fuzz_gguf (tests/fuzz/corpus_gguf/), each under
libFuzzer's 4096-byte limit: a vocabulary file (every byte token, merges,
the smollm pre-tokenizer, a chat template), a model file (a one-layer Llama
in F32, F16, BF16, Q8_0, Q4_0 and Q4_1 with a tiny vocabulary) and a
truncated copy of it. Needs the gguf and numpy packages (PyPI); CI only
reads the committed seeds.

  python3 tests/fuzz/make_gguf_corpus.py tests/fuzz/corpus_gguf
"""
import os
import sys

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q


def bytes_to_unicode():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def write(path, build):
    w = gguf.GGUFWriter(path, "llama")
    build(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(path, os.path.getsize(path))


def vocab_file(w):
    b2u = bytes_to_unicode()
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [b2u[b] for b in range(256)]
    merges = ["Ġ t", "h e", "Ġt he"]
    tokens += ["Ġt", "he", "Ġthe"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types([3, 3, 3] + [1] * 259)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_chat_template("{% for message in messages %}{{'<|im_start|>' + message['role'] + "
                        "'\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}")


def model_file(w):
    rng = np.random.default_rng(1)
    D, F, V = 32, 32, 4
    w.add_context_length(16)
    w.add_embedding_length(D)
    w.add_feed_forward_length(F)
    w.add_block_count(1)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_rope_dimension_count(D // 2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["a", "b", "ab", "<s>"])
    w.add_token_types([1, 1, 1, 3])
    w.add_token_merges(["a b"])

    def add(name, rows, cols, qt):
        t = rng.standard_normal((rows, cols) if rows else cols).astype(np.float32)
        if qt == Q.F32:
            w.add_tensor(name, t)
        elif qt == Q.F16:
            w.add_tensor(name, t.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(t, qt), raw_dtype=qt)

    add("token_embd.weight", V, D, Q.Q8_0)
    add("blk.0.attn_norm.weight", 0, D, Q.F32)
    add("blk.0.attn_q.weight", D, D, Q.Q4_0)
    add("blk.0.attn_k.weight", D // 2, D, Q.Q4_1)
    add("blk.0.attn_v.weight", D // 2, D, Q.BF16)
    add("blk.0.attn_output.weight", D, D, Q.Q4_0)
    add("blk.0.ffn_norm.weight", 0, D, Q.F16)
    add("blk.0.ffn_gate.weight", F, D, Q.Q4_0)
    add("blk.0.ffn_up.weight", F, D, Q.Q4_1)
    add("blk.0.ffn_down.weight", D, F, Q.Q4_0)
    add("output_norm.weight", 0, D, Q.F32)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/corpus_gguf"
    os.makedirs(out, exist_ok=True)
    write(os.path.join(out, "vocab.gguf"), vocab_file)
    write(os.path.join(out, "model.gguf"), model_file)
    with open(os.path.join(out, "model.gguf"), "rb") as f:
        data = f.read()
    with open(os.path.join(out, "truncated.gguf"), "wb") as f:
        f.write(data[: len(data) * 2 // 3])


if __name__ == "__main__":
    main()
