/* test_model_cli.c: `tern model init`, `tern generate` and `tern score` end
 * to end, driving the test plugin test_uniform_model (tests/test_plugins/:
 * byte tokens, uniform probabilities, the transformer plugin's settings). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define WORK TERN_TEST_WORK_DIR
/* the command with the test plugins on its search path */
#define T "TERN_PLUGIN_PATH=" TERN_TEST_PLUGINS_DIR " " TERN_TEST_BIN
#define P "--plugin test_uniform_model"
/* the output's bytes in hex, and its length; the command's exit code is kept */
#define HEX " > g$$.out && od -An -tx1 g$$.out && rm g$$.out"
#define BYTES " > g$$.out && wc -c < g$$.out && rm g$$.out"

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + strlen(needle), needle))
        n++;
    return n;
}

/* Remove whitespace (od output spacing). */
static void squeeze(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++)
        if (*r != ' ' && *r != '\n')
            *w++ = *r;
    *w = '\0';
}

/* A saved model in WORK/name, made by `tern model init`. */
static void make_model(const char *name)
{
    result r;
    run(&r, "rm -rf %s && " T " model init --preset tiny " P " %s", name, name);
    cr_assert_eq(r.code, 0, "model init %s: %s", name, r.err);
}

Test(model_cli, help_texts)
{
    result r;
    run(&r, "%s help model", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "usage: tern model init --preset NAME [--seed S] [--plugin P] "
                            "OUT_DIR"), "%s", r.out);
    run(&r, "%s help generate", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "usage: tern generate MODEL_DIR --prompt TEXT"), "%s", r.out);
    cr_expect(strstr(r.out, "--stop-token ID"), "%s", r.out);
    run(&r, "%s help score", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "usage: tern score MODEL_DIR --text TEXT"), "%s", r.out);
    run(&r, "%s generate --help", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "--max-tokens N"), "%s", r.out);
    run(&r, "%s model init --help", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "--preset NAME"), "%s", r.out);
    run(&r, "%s help", TERN);
    cr_expect(strstr(r.out, "tern score MODEL_DIR"), "the overview lists it: %s", r.out);
}

Test(model_cli, init_writes_a_directory_and_never_overwrites)
{
    result r;
    char text[4096];
    run(&r, "rm -rf mi && " T " model init --preset bench --seed 3 " P " mi");
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "mi: new model, preset bench, seed 3, plugin test_uniform_model"),
              "%s", r.out);
    cr_expect(strstr(r.out, "  config.json"), "lists the files: %s", r.out);
    slurp(WORK "/mi/config.json", text, sizeof text);
    cr_expect(strstr(text, "\"model_type\":\"uniform_bytes\""), "%s", text);
    cr_expect(strstr(text, "\"preset\":\"bench\",\"seed\":3"), "%s", text);

    /* again: refused, untouched */
    run(&r, T " model init --preset tiny --seed 9 " P " mi");
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "mi: exists and is not empty"), "%s", r.err);
    slurp(WORK "/mi/config.json", text, sizeof text);
    cr_expect(strstr(text, "\"seed\":3"), "kept: %s", text);

    /* a file is no directory either */
    run(&r, "rm -f mi_file && echo x > mi_file && " T " model init --preset tiny " P " mi_file");
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "mi_file: exists and is not a directory"), "%s", r.err);

    /* an empty directory is fine, missing parents are created, the seed
     * defaults to the plugin's */
    run(&r, "rm -rf mi_empty && mkdir mi_empty && " T " model init --preset tiny " P " mi_empty");
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "mi_empty: new model, preset tiny, plugin test_uniform_model"),
              "%s", r.out);
    run(&r, "rm -rf mi_deep && " T " model init --preset tiny " P " mi_deep/a/b");
    cr_expect_eq(r.code, 0, "%s", r.err);
    slurp(WORK "/mi_deep/a/b/config.json", text, sizeof text);
    cr_expect(strstr(text, "uniform_bytes"), "%s", text);
    run(&r, "rm -rf mi mi_file mi_empty mi_deep");
}

/* A failed save leaves nothing behind: not the files, not the directories
 * the command created, and an empty OUT_DIR given stays (empty). */
Test(model_cli, init_cleans_up_after_a_failed_save)
{
    result r;
    struct stat st;
    run(&r, "rm -rf mf && " T " model init --preset tiny --seed 666 " P " mf/a/b");
    cr_expect_eq(r.code, 1);
    cr_expect(strstr(r.err, "tern model init: saving the new model to mf/a/b failed: "
                            "test_uniform_model: a model of seed 666 fails to save"),
              "%s", r.err);
    cr_expect_neq(stat(WORK "/mf", &st), 0, "the directories made are removed");
    run(&r, "mkdir mf && " T " model init --preset tiny --seed 666 " P " mf && ls -A mf");
    cr_expect_eq(r.code, 1);
    run(&r, "ls -A mf");
    cr_expect_eq(r.code, 0, "the given directory stays");
    cr_expect_str_eq(r.out, "", "and is empty again");
    run(&r, "rm -rf mf");
}

Test(model_cli, init_refuses_a_bad_preset_plugin_or_usage)
{
    result r;
    struct stat st;
    run(&r, "rm -rf mb && " T " model init --preset huge " P " mb");
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "tern model init: model.init.preset"), "%s", r.err);
    cr_expect(strstr(r.err, "huge"), "%s", r.err);
    cr_expect(strstr(r.err, "tiny"), "names the presets: %s", r.err);
    cr_expect_neq(stat(WORK "/mb", &st), 0, "nothing created for a refused preset");

    run(&r, T " model init --preset tiny --plugin no_such_model mb");
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "no model plugin named 'no_such_model'"), "%s", r.err);
    cr_expect_neq(stat(WORK "/mb", &st), 0);

    run(&r, T " model init --preset tiny --plugin synchronous mb");
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "'synchronous' is a sync plugin"), "%s", r.err);

    run(&r, "%s model", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "model needs a subcommand: init"), "%s", r.err);
    run(&r, "%s model frob", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "unknown subcommand 'model frob'"), "%s", r.err);
    run(&r, "%s model init mb", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "model init needs --preset NAME"), "%s", r.err);
    run(&r, "%s model init --preset tiny", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "model init needs OUT_DIR"), "%s", r.err);
    run(&r, "%s model init --preset tiny --seed x mb", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "--seed needs a whole number"), "%s", r.err);
    run(&r, "%s model init --preset tiny --seed -1 mb", TERN);
    cr_expect_eq(r.code, 2);
    run(&r, "%s model init --preset", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "--preset needs a value"), "%s", r.err);
    cr_expect_neq(stat(WORK "/mb", &st), 0);
}

Test(model_cli, generate_prints_max_tokens_bytes_seeded)
{
    make_model("mg");
    result r;
    run(&r, T " generate mg --prompt hello --max-tokens 50 --seed 7 " P BYTES);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_eq(atoi(r.out), 51, "50 bytes and a newline: %s", r.out);

    char a[16384], b[16384];
    run(&r, T " generate mg --prompt hello --max-tokens 40 --seed 7 " P HEX);
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(a, sizeof a, "%s", r.out);
    run(&r, T " generate mg --prompt hello --max-tokens 40 --seed=7 " P HEX);
    snprintf(b, sizeof b, "%s", r.out);
    cr_expect_str_eq(a, b, "same seed, same output");
    run(&r, T " generate mg --prompt hello --max-tokens 40 --seed 8 " P HEX);
    cr_expect_str_neq(a, r.out, "another seed, another output");
    run(&r, "rm -rf mg");
}

/* Issue 28: a crash inside a model plugin's op names the plugin and the op
 * before tern dies of it (exit status as before: 128 + SIGABRT). */
Test(model_cli, a_crash_in_generate_names_the_plugin_and_the_op)
{
    result r;
    run(&r, "rm -rf mc && " T " model init --preset tiny " P " mc");
    cr_assert_eq(r.code, 0, "%s", r.err);
    run(&r, T " generate mc --prompt 'please crash' " P);
    cr_expect_eq(r.code, 128 + 6, "killed by SIGABRT, as before: %d", r.code);
    cr_expect(strstr(r.err, "plugin 'test_uniform_model' ("), "%s", r.err);
    cr_expect(strstr(r.err, "uniform_model.so) crashed with SIGABRT (abort(), a failed assert) "
                            "in its generate() op"), "%s", r.err);
    cr_expect(strstr(r.err, "report this line to its author"), "%s", r.err);
    run(&r, "rm -rf mc");
}

Test(model_cli, generate_greedy_stop_and_samples)
{
    make_model("ms");
    result r;
    run(&r, T " generate ms --prompt hi --max-tokens 5 --temperature 0 " P HEX);
    cr_assert_eq(r.code, 0, "%s", r.err);
    squeeze(r.out);
    cr_expect_str_eq(r.out, "00000000000a", "five NUL bytes (token 0) and a newline");

    /* a stop token ends the sample (greedy gives token 0 at once) */
    run(&r, T " generate ms --prompt hi --max-tokens 5 --temperature 0 --stop-token 0 " P
              HEX);
    cr_assert_eq(r.code, 0, "%s", r.err);
    squeeze(r.out);
    cr_expect_str_eq(r.out, "000a", "one NUL byte and a newline");

    run(&r, T " generate ms --prompt hi --max-tokens 10 --samples 3 --seed 2 " P
              " > gs.out && sed -n '/^--- sample/p' gs.out");
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_eq(count(r.out, "--- sample "), 3, "%s", r.out);
    cr_expect(strstr(r.out, "--- sample 1 (10 tokens, logprob -55.45"), "%s", r.out);
    cr_expect(strstr(r.out, "--- sample 3 (10 tokens, logprob -55.45"), "%s", r.out);

    run(&r, T " generate ms --prompt hi --max-tokens 4 --temperature 0 --samples 2 " P
              " > gs.out && sed -n '/^--- sample/p' gs.out");
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "--- sample 2 (4 tokens, logprob 0.000000) ---\n"), "%s", r.out);

    /* top-k and top-p reach the model: k = 1 behaves as greedy */
    run(&r, T " generate ms --prompt hi --max-tokens 3 --top-k 1 --top-p 0.5 " P
              HEX);
    cr_assert_eq(r.code, 0, "%s", r.err);
    squeeze(r.out);
    cr_expect_str_eq(r.out, "0000000a");
    run(&r, "rm -rf ms gs.out");
}

Test(model_cli, score_prints_every_position_and_perplexity)
{
    make_model("mc");
    result r;
    run(&r, T " score mc --text hello " P);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect_eq(count(r.out, "\n"), 6, "5 tokens and the total: %s", r.out);
    cr_expect(strstr(r.out, "1\t104\th\t-5.545177\t5.545177\n"), "%s", r.out);
    cr_expect(strstr(r.out, "5\t111\to\t-5.545177\t5.545177\n"), "%s", r.out);
    cr_expect(strstr(r.out, "total logprob -27.7258"), "%s", r.out);
    cr_expect(strstr(r.out, "over 5 tokens, perplexity 256.0"), "%s", r.out);

    /* escapes: tab, backslash, newline, a byte that is not UTF-8 on its own */
    run(&r, T " score mc --text \"$(printf 'a\\011\\134\\012\\377')\" " P);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "2\t9\t\\t\t"), "%s", r.out);
    cr_expect(strstr(r.out, "3\t92\t\\\\\t"), "%s", r.out);
    cr_expect(strstr(r.out, "4\t10\t\\n\t"), "%s", r.out);
    cr_expect(strstr(r.out, "5\t255\t\\xff\t"), "%s", r.out);
    cr_expect(strstr(r.out, "over 5 tokens"), "%s", r.out);

    run(&r, T " score mc --text '' " P);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "no token to score"), "%s", r.err);
    run(&r, T " score mc " P);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "score needs --text TEXT"), "%s", r.err);
    run(&r, "rm -rf mc");
}

Test(model_cli, bad_model_dir_and_prompt)
{
    result r;
    run(&r, T " generate no_such_dir --prompt hi " P);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "tern generate: no_such_dir: no such file or directory"), "%s", r.err);
    run(&r, T " score no_such_dir --text hi " P);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "no_such_dir: no such file or directory"), "%s", r.err);

    /* a directory the plugin cannot load: its own message */
    run(&r, "rm -rf m_empty && mkdir m_empty && " T " generate m_empty --prompt hi " P);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "failed to start"), "%s", r.err);
    cr_expect(strstr(r.err, "m_empty/config.json: cannot read"), "%s", r.err);
    cr_expect_eq(count(r.err, "\n"), 1, "one line: %s", r.err);

    /* a prompt the tokenizer rejects */
    make_model("mp");
    run(&r, T " generate mp --prompt \"$(printf 'a\\001b')\" " P);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "tern generate: the model cannot tokenize the prompt: "
                            "test_uniform_model: byte 0x01 at offset 1"), "%s", r.err);
    run(&r, "rm -rf m_empty mp");
}

Test(model_cli, generate_usage_errors)
{
    result r;
    struct {
        const char *args, *want;
    } cases[] = {
        {"m --prompt x --max-tokens abc", "--max-tokens needs a whole number"},
        {"m --prompt x --max-tokens 0", "--max-tokens needs a whole number"},
        {"m --prompt x --max-tokens 5x", "--max-tokens needs a whole number"},
        {"m --prompt x --temperature hot", "--temperature needs a number >= 0"},
        {"m --prompt x --temperature -1", "--temperature needs a number >= 0"},
        {"m --prompt x --top-k -2", "--top-k needs a whole number"},
        {"m --prompt x --top-p 0", "--top-p needs a number in (0, 1]"},
        {"m --prompt x --top-p 1.5", "--top-p needs a number in (0, 1]"},
        {"m --prompt x --seed -3", "--seed needs a whole number"},
        {"m --prompt x --samples 0", "--samples needs a whole number"},
        {"m --prompt x --stop-token x", "--stop-token needs a whole number"},
        {"m --prompt x --threads 0", "--threads needs a whole number"},
        {"m --prompt x --bogus", "unknown option '--bogus'"},
        {"m n --prompt x", "unexpected argument 'n'"},
        {"m", "generate needs --prompt TEXT"},
        {"--prompt x", "generate needs MODEL_DIR"},
        {"m --prompt", "--prompt needs a value"},
        {"m --prompt x --system s", "--system needs --chat"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run(&r, "%s generate %s", TERN, cases[i].args);
        cr_expect_eq(r.code, 2, "%s: exit %d", cases[i].args, r.code);
        cr_expect(strstr(r.err, cases[i].want), "%s: %s", cases[i].args, r.err);
        cr_expect(strstr(r.err, "usage: tern generate"), "%s: %s", cases[i].args, r.err);
    }
}

/* The test plugin has no chat template (no encode_chat op): --chat is refused
 * with what to do, before anything is generated. */
Test(model_cli, generate_chat_needs_a_chat_template)
{
    make_model("mc");
    result r;
    run(&r, T " generate mc --chat --prompt hello " P);
    cr_expect_eq(r.code, 2, "exit %d: %s", r.code, r.err);
    cr_expect(strstr(r.err, "the model plugin has no chat template"), "%s", r.err);
    cr_expect_eq(r.out[0], '\0', "nothing generated: %s", r.out);
    run(&r, "rm -rf mc");
}

/* Paths reach the plugin unchanged, quotes and backslashes included. */
Test(model_cli, a_path_with_a_quote_and_a_backslash)
{
    result r;
    run(&r, "rm -rf 'q\"x\\y' && " T " model init --preset tiny " P " 'q\"x\\y'");
    cr_assert_eq(r.code, 0, "%s", r.err);
    run(&r, T " generate 'q\"x\\y' --prompt hi --max-tokens 3 " P BYTES);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect_eq(atoi(r.out), 4, "%s", r.out);
    run(&r, T " score 'q\"x\\y' --text hi " P);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "over 2 tokens"), "%s", r.out);
    run(&r, "rm -rf 'q\"x\\y'");
}

/* Weights holding a NaN (a diverged run's checkpoint) are refused by
 * `tern generate` and `tern score` (by the model as it starts, so by `tern
 * check` and `tern run` too), naming the weight, instead of printing an
 * empty sample or a score of nan. */
Test(model_cli, nan_weights_are_refused_with_the_weight_named)
{
    result r;
    run(&r, "rm -rf nanm && %s model init --preset tiny nanm", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    /* the first tensor's first element: data starts after the 8-byte header
     * length and the JSON header */
    FILE *f = fopen(WORK "/nanm/model.safetensors", "r+b");
    cr_assert_not_null(f);
    unsigned char len[8];
    cr_assert_eq(fread(len, 1, 8, f), 8);
    long long hdr = 0;
    for (int i = 7; i >= 0; i--)
        hdr = hdr << 8 | len[i];
    const float nan = __builtin_nanf("");
    cr_assert_eq(fseek(f, 8 + hdr, SEEK_SET), 0);
    cr_assert_eq(fwrite(&nan, sizeof nan, 1, f), 1);
    fclose(f);
    run(&r, "%s generate nanm --prompt '1+1=' --max-tokens 4", TERN);
    cr_expect_eq(r.code, 2, "generate: %d %s", r.code, r.err);
    /* the transformer plugin refuses them as it starts (the CLI's own check,
     * for any model plugin, would come after) */
    cr_expect(strstr(r.err, "nanm: tensor model.embed_tokens.weight holds NaN at weight 0 "),
              "%s", r.err);
    cr_expect_str_eq(r.out, "", "nothing printed");
    run(&r, "%s score nanm --text '1+1=2'", TERN);
    cr_expect_eq(r.code, 2, "score: %d %s", r.code, r.err);
    cr_expect(strstr(r.err, "tern score: ") && strstr(r.err, "holds NaN at weight 0 "), "%s",
              r.err);
    cr_expect(!strstr(r.out, "nan"), "no nan printed: %s", r.out);
}
