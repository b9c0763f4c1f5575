/* test_hf_config.c: Hugging Face config.json for Llama
 * (plugins/models/transformer/hf/hf_config.h): write/read round trips, a real
 * model's config with keys tern ignores, every refusal with the key it
 * names, and the presets' sizes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoder/llama.h"
#include "hf/hf_config.h"

static char *work_path(const char *name)
{
    static char buf[4][1024];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, sizeof buf[0], "%s/hfc_%s", TERN_TEST_WORK_DIR, name);
    return p;
}

static const char *write_text(const char *name, const char *text)
{
    const char *path = work_path(name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
    return path;
}

static void assert_config_eq(const llama_config *a, const llama_config *b)
{
    cr_assert_eq(a->vocab_size, b->vocab_size);
    cr_assert_eq(a->hidden_size, b->hidden_size);
    cr_assert_eq(a->intermediate_size, b->intermediate_size);
    cr_assert_eq(a->n_layers, b->n_layers);
    cr_assert_eq(a->n_heads, b->n_heads);
    cr_assert_eq(a->n_kv_heads, b->n_kv_heads);
    cr_assert_eq(a->max_positions, b->max_positions);
    cr_assert_eq(a->rms_eps, b->rms_eps, "rms_eps %.9g != %.9g", (double)a->rms_eps,
                 (double)b->rms_eps);
    cr_assert_eq(a->rope_theta, b->rope_theta, "rope_theta %.9g != %.9g", (double)a->rope_theta,
                 (double)b->rope_theta);
    cr_assert_eq(a->tie_embeddings, b->tie_embeddings);
    cr_assert_eq(a->bos_id, b->bos_id);
    cr_assert_eq(a->eos_id, b->eos_id);
    cr_assert_eq(a->pad_id, b->pad_id);
}

/* SmolLM-135M's config.json, as published (plus a list of eos ids). */
static const char *smollm =
    "{\n"
    "  \"architectures\": [\"LlamaForCausalLM\"],\n"
    "  \"attention_bias\": false,\n"
    "  \"attention_dropout\": 0.0,\n"
    "  \"bos_token_id\": 0,\n"
    "  \"eos_token_id\": [0, 2],\n"
    "  \"hidden_act\": \"silu\",\n"
    "  \"hidden_size\": 576,\n"
    "  \"initializer_range\": 0.02,\n"
    "  \"intermediate_size\": 1536,\n"
    "  \"max_position_embeddings\": 2048,\n"
    "  \"mlp_bias\": false,\n"
    "  \"model_type\": \"llama\",\n"
    "  \"num_attention_heads\": 9,\n"
    "  \"num_hidden_layers\": 30,\n"
    "  \"num_key_value_heads\": 3,\n"
    "  \"pad_token_id\": null,\n"
    "  \"pretraining_tp\": 1,\n"
    "  \"rms_norm_eps\": 1e-05,\n"
    "  \"rope_scaling\": null,\n"
    "  \"rope_theta\": 10000.0,\n"
    "  \"tie_word_embeddings\": true,\n"
    "  \"torch_dtype\": \"bfloat16\",\n"
    "  \"transformers_version\": \"4.40.1\",\n"
    "  \"use_cache\": true,\n"
    "  \"vocab_size\": 49152\n"
    "}\n";

/* smollm with `from` replaced by `to` (both must occur once). */
static const char *variant(const char *name, const char *from, const char *to)
{
    const char *at = strstr(smollm, from);
    cr_assert_not_null(at, "\"%s\" not in the config", from);
    char *text = NULL;
    int w = asprintf(&text, "%.*s%s%s", (int)(at - smollm), smollm, to, at + strlen(from));
    cr_assert_geq(w, 0);
    const char *path = write_text(name, text);
    free(text);
    return path;
}

static void expect_refused(const char *path, const char *frag1, const char *frag2)
{
    llama_config c;
    char err[1024] = "";
    cr_assert_eq(hf_config_read(path, &c, err, sizeof err), -1, "%s was accepted", path);
    cr_assert_not_null(strstr(err, frag1), "message \"%s\" lacks \"%s\"", err, frag1);
    if (frag2)
        cr_assert_not_null(strstr(err, frag2), "message \"%s\" lacks \"%s\"", err, frag2);
}

Test(hf_config, round_trip)
{
    const char *names[2] = {"tiny", "bench"};
    for (int i = 0; i < 2; i++) {
        llama_config c, back;
        char err[1024] = "";
        cr_assert_eq(llama_preset(names[i], &c, err, sizeof err), 0, "%s", err);
        const char *path = work_path("round_trip.json");
        cr_assert_eq(hf_config_write(path, &c, err, sizeof err), 0, "%s", err);
        cr_assert_eq(hf_config_read(path, &back, err, sizeof err), 0, "%s", err);
        assert_config_eq(&back, &c);
    }
    /* awkward floats come back exactly */
    llama_config c, back;
    char err[1024] = "";
    llama_preset("tiny", &c, err, sizeof err);
    c.rms_eps = 1.2345678e-6f;
    c.rope_theta = 500000.0f;
    c.tie_embeddings = 0;
    c.pad_id = 0;
    const char *path = work_path("round_trip2.json");
    cr_assert_eq(hf_config_write(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(hf_config_read(path, &back, err, sizeof err), 0, "%s", err);
    assert_config_eq(&back, &c);
}

Test(hf_config, written_file_has_what_transformers_expects)
{
    llama_config c;
    char err[1024] = "";
    llama_preset("tiny", &c, err, sizeof err);
    const char *path = work_path("written.json");
    cr_assert_eq(hf_config_write(path, &c, err, sizeof err), 0, "%s", err);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    struct stat st;
    cr_assert_neq(stat(tmp, &st), 0, "the temp file remains");
    FILE *f = fopen(path, "r");
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *want[] = {
        "{\n  \"architectures\": [\n    \"LlamaForCausalLM\"\n  ],\n",
        "\n  \"model_type\": \"llama\",\n",
        "\n  \"hidden_act\": \"silu\",\n",
        "\n  \"torch_dtype\": \"float32\",\n",
        "\n  \"attention_bias\": false,\n",
        "\n  \"mlp_bias\": false,\n",
        "\n  \"rope_scaling\": null,\n",
        "\n  \"initializer_range\": 0.02,\n",
        "\n  \"use_cache\": true,\n",
        "\n  \"rms_norm_eps\": 1e-5,\n",
        "\n  \"rope_theta\": 10000.0,\n",
        "\n  \"tie_word_embeddings\": true,\n",
        "\n  \"num_key_value_heads\": 2,\n",
        "\n  \"vocab_size\": 259\n}\n",
        "\n  \"bos_token_id\": 256,\n",
        "\n  \"eos_token_id\": 257,\n",
        "\n  \"pad_token_id\": 258,\n",
        "\n  \"max_position_embeddings\": 256,\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert_not_null(strstr(text, want[i]), "config.json lacks %s:\n%s", want[i], text);
}

Test(hf_config, reads_a_real_llama_config)
{
    llama_config c;
    char err[1024] = "";
    cr_assert_eq(hf_config_read(write_text("smollm.json", smollm), &c, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(c.vocab_size, 49152);
    cr_assert_eq(c.hidden_size, 576);
    cr_assert_eq(c.intermediate_size, 1536);
    cr_assert_eq(c.n_layers, 30);
    cr_assert_eq(c.n_heads, 9);
    cr_assert_eq(c.n_kv_heads, 3);
    cr_assert_eq(c.max_positions, 2048);
    cr_assert_eq(c.rms_eps, 1e-5f);
    cr_assert_eq(c.rope_theta, 10000.0f);
    cr_assert_eq(c.tie_embeddings, 1);
    cr_assert_eq(c.bos_id, 0);
    cr_assert_eq(c.eos_id, 0, "the first of a list of eos ids");
    cr_assert_eq(c.pad_id, 0, "pad null: eos");
}

Test(hf_config, defaults_as_transformers)
{
    /* no num_key_value_heads, rope_theta, tie_word_embeddings, pad_token_id */
    const char *text =
        "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
        "\"vocab_size\": 100, \"max_position_embeddings\": 32, \"rms_norm_eps\": 1e-6, "
        "\"bos_token_id\": 1, \"eos_token_id\": 2, \"head_dim\": 16, \"rope_theta\": 500000}";
    llama_config c;
    char err[1024] = "";
    cr_assert_eq(hf_config_read(write_text("defaults.json", text), &c, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(c.n_kv_heads, 4);
    cr_assert_eq(c.rope_theta, 500000.0f, "an integer rope_theta is read as a number");
    cr_assert_eq(c.tie_embeddings, 0);
    cr_assert_eq(c.pad_id, 2);
    cr_assert_eq(c.rms_eps, 1e-6f);
}

Test(hf_config, reads_transformers_5_rope_parameters)
{
    /* transformers 5 moves rope_theta into rope_parameters and may drop the top-level key */
    llama_config c;
    char err[1024] = "";
    const char *path = variant("rp.json", "  \"rope_theta\": 10000.0,\n",
                               "  \"rope_parameters\": {\"rope_theta\": 500000.0, "
                               "\"rope_type\": \"default\"},\n");
    cr_assert_eq(hf_config_read(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.rope_theta, 500000.0f);
    expect_refused(variant("rp_yarn.json", "  \"rope_theta\": 10000.0,\n",
                           "  \"rope_parameters\": {\"rope_theta\": 500000.0, "
                           "\"rope_type\": \"yarn\", \"factor\": 8.0},\n"),
                   "key \"rope_parameters.rope_type\" is \"yarn\"",
                   "\"default\" and \"llama3\" only");
    /* Llama 3 scaling given the transformers 5 way */
    path = variant("rp_llama3.json", "  \"rope_theta\": 10000.0,\n",
                   "  \"rope_parameters\": {\"rope_theta\": 500000.0, \"rope_type\": \"llama3\", "
                   "\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
                   "\"original_max_position_embeddings\": 8192},\n");
    cr_assert_eq(hf_config_read(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.rope_theta, 500000.0f);
    cr_assert_eq(c.rope_factor, 8.0f);
    cr_assert_eq(c.rope_orig_max_pos, 8192);
    expect_refused(variant("rp_llama3_short.json", "  \"rope_theta\": 10000.0,\n",
                           "  \"rope_parameters\": {\"rope_theta\": 500000.0, "
                           "\"rope_type\": \"llama3\", \"factor\": 8.0},\n"),
                   "key \"rope_parameters\" has rope_type \"llama3\" but no \"low_freq_factor\"",
                   NULL);
    expect_refused(variant("rp_both.json", "  \"pretraining_tp\": 1,\n",
                           "  \"rope_parameters\": {\"rope_theta\": 500000.0},\n"),
                   "keys \"rope_theta\" (10000) and \"rope_parameters.rope_theta\" (500000) "
                   "disagree", NULL);
    expect_refused(variant("rp_type.json", "  \"pretraining_tp\": 1,\n",
                           "  \"rope_parameters\": [10000],\n"),
                   "key \"rope_parameters\" must be an object, found an array", NULL);
}

Test(hf_config, refuses_missing_keys)
{
    expect_refused(variant("miss1.json", "  \"hidden_size\": 576,\n", ""),
                   "hfc_miss1.json: missing key \"hidden_size\" (an integer)", NULL);
    expect_refused(variant("miss2.json", "  \"rms_norm_eps\": 1e-05,\n", ""),
                   "missing key \"rms_norm_eps\" (a number)", NULL);
    expect_refused(variant("miss3.json", "  \"bos_token_id\": 0,\n", ""),
                   "missing key \"bos_token_id\"", NULL);
    expect_refused(write_text("miss4.json", "{\"hidden_size\": 64}"),
                   "missing key \"architectures\" (and no \"model_type\")", NULL);
    /* without "architectures", "model_type" says which (as for AutoConfig) */
    llama_config c;
    char err[1024] = "";
    const char *path = variant("miss5.json", "  \"architectures\": [\"LlamaForCausalLM\"],\n", "");
    cr_assert_eq(hf_config_read(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c.arch, ARCH_LLAMA);
}

Test(hf_config, refuses_wrong_types)
{
    expect_refused(variant("type1.json", "\"hidden_size\": 576", "\"hidden_size\": \"576\""),
                   "key \"hidden_size\" must be an integer, found a string", NULL);
    expect_refused(variant("type2.json", "\"hidden_size\": 576", "\"hidden_size\": 576.0"),
                   "key \"hidden_size\" must be an integer, found a real number", NULL);
    expect_refused(variant("type3.json", "\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": null"),
                   "key \"rms_norm_eps\" must be a number, found null", NULL);
    expect_refused(variant("type4.json", "\"tie_word_embeddings\": true",
                           "\"tie_word_embeddings\": 1"),
                   "key \"tie_word_embeddings\" must be true or false, found an integer", NULL);
    expect_refused(variant("type5.json", "\"eos_token_id\": [0, 2]", "\"eos_token_id\": \"</s>\""),
                   "key \"eos_token_id\" must be an integer token id, found a string", NULL);
    expect_refused(variant("type6.json", "\"eos_token_id\": [0, 2]", "\"eos_token_id\": []"),
                   "key \"eos_token_id\" is an empty list", NULL);
    expect_refused(variant("type7.json", "\"architectures\": [\"LlamaForCausalLM\"]",
                           "\"architectures\": \"LlamaForCausalLM\""),
                   "key \"architectures\" must be a list of strings, found a string", NULL);
    expect_refused(variant("type8.json", "\"num_hidden_layers\": 30",
                           "\"num_hidden_layers\": 30000000000"),
                   "key \"num_hidden_layers\" is 30000000000, out of range", NULL);
    expect_refused(write_text("type9.json", "[1]"), "must hold a JSON object, found an array",
                   NULL);
    expect_refused(write_text("type10.json", "{\"a\": "), "hfc_type10.json:1:", "not a valid JSON");
    expect_refused(work_path("absent.json"), "hfc_absent.json: cannot read: No such file or directory",
                   NULL);
}

Test(hf_config, refuses_a_fifo_without_blocking)
{
    alarm(20); /* a read that blocks on the FIFO ends the test here */
    const char *path = work_path("fifo.json");
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    char want[1200];
    snprintf(want, sizeof want, "%s: cannot read: not a regular file but a FIFO (named pipe); "
             "give a config.json file", path);
    expect_refused(path, want, NULL);
    unlink(path);
}

Test(hf_config, refuses_unsupported_options)
{
    expect_refused(variant("rope.json", "\"rope_scaling\": null",
                           "\"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}"),
                   "key \"rope_scaling.rope_type\" is \"linear\"",
                   "\"default\" and \"llama3\" only");
    expect_refused(variant("rope2.json", "\"rope_scaling\": null",
                           "\"rope_scaling\": {\"factor\": 8.0, \"type\": \"dynamic\"}"),
                   "key \"rope_scaling.type\" is \"dynamic\"", NULL);
    expect_refused(variant("mistral.json", "[\"LlamaForCausalLM\"]", "[\"MistralForCausalLM\"]"),
                   "key \"architectures\" is [\"MistralForCausalLM\"]",
                   "tern implements LlamaForCausalLM");
    expect_refused(variant("mistral2.json", "\"model_type\": \"llama\"",
                           "\"model_type\": \"mistral\""),
                   "key \"model_type\" is \"mistral\"", NULL);
    expect_refused(variant("qwen.json", "[\"LlamaForCausalLM\"]", "[\"Qwen2ForCausalLM\"]"),
                   "key \"architectures\" names Qwen2ForCausalLM but key \"model_type\" is "
                   "\"llama\"", NULL);
    expect_refused(variant("hd.json", "\"pretraining_tp\": 1", "\"head_dim\": 128"),
                   "key \"head_dim\" is 128 but hidden_size 576 / num_attention_heads 9 is 64",
                   NULL);
    expect_refused(variant("act.json", "\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\""),
                   "key \"hidden_act\" is \"gelu\"; tern implements \"silu\" only", NULL);
    /* and llama_config_check's findings, prefixed with the file */
    expect_refused(variant("kv.json", "\"num_key_value_heads\": 3", "\"num_key_value_heads\": 4"),
                   "hfc_kv.json: num_key_value_heads 4 must divide num_attention_heads 9", NULL);
    expect_refused(variant("pad.json", "\"pad_token_id\": null", "\"pad_token_id\": 50000"),
                   "hfc_pad.json: special token ids", "below vocab_size 49152");
}

Test(hf_config, write_refuses_an_invalid_config_and_a_missing_directory)
{
    llama_config c;
    char err[1024] = "";
    llama_preset("tiny", &c, err, sizeof err);
    char path[1100];
    snprintf(path, sizeof path, "%s/hfc-no-such-dir/config.json", TERN_TEST_WORK_DIR);
    cr_assert_eq(hf_config_write(path, &c, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "cannot create"), "%s", err);
    c.n_kv_heads = 3;
    cr_assert_eq(hf_config_write(work_path("bad.json"), &c, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "not writing an invalid config"), "%s", err);
}

Test(hf_config, presets)
{
    llama_config c;
    char err[1024] = "";
    cr_assert_eq(llama_preset("tiny", &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(llama_config_check(&c, err, sizeof err), 0, "%s", err);
    size_t n = llama_param_count(&c);
    cr_assert(n >= 600000 && n <= 1000000, "tiny has %zu parameters", n);
    cr_assert_eq(n, 820736, "the count stated in hf_config.c");
    cr_assert_eq(c.vocab_size, 259);
    cr_assert_eq(c.bos_id, 256);
    cr_assert_eq(c.eos_id, 257);
    cr_assert_eq(c.pad_id, 258);
    cr_assert_eq(c.tie_embeddings, 1);

    cr_assert_eq(llama_preset("bench", &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(llama_config_check(&c, err, sizeof err), 0, "%s", err);
    n = llama_param_count(&c);
    cr_assert(n >= 9000000 && n <= 11000000, "bench has %zu parameters", n);
    cr_assert_eq(n, 9641088, "the count stated in hf_config.c");
    cr_assert_eq(c.tie_embeddings, 0);

    cr_assert_eq(llama_preset("huge", &c, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "unknown model preset \"huge\""), "%s", err);
    cr_assert_not_null(strstr(err, "tiny"), "%s", err);
    cr_assert_not_null(strstr(err, "bench"), "%s", err);
}

Test(hf_config, llama_biases_are_read_and_written)
{
    /* attention_bias: q, k, v and o_proj; mlp_bias: gate, up, down */
    llama_config c, back;
    char err[1024] = "";
    const char *path = variant("abias.json", "\"attention_bias\": false", "\"attention_bias\": true");
    cr_assert_eq(hf_config_read(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert(c.qkv_bias && c.o_bias && !c.mlp_bias);
    path = variant("mbias.json", "\"mlp_bias\": false", "\"mlp_bias\": true");
    cr_assert_eq(hf_config_read(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert(!c.qkv_bias && !c.o_bias && c.mlp_bias);
    const char *out = work_path("mbias_out.json");
    cr_assert_eq(hf_config_write(out, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(hf_config_read(out, &back, err, sizeof err), 0, "%s", err);
    cr_assert_eq(memcmp(&c, &back, sizeof c), 0, "the config changed on a write/read round trip");
}
