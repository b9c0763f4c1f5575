/* test_cli.c: the `tern` command end to end, as a user runs it: exit codes,
 * messages, `tern plugins`, `tern check`, `tern run` and its run directory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "command.h"
#include "tern/abi.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define BAD TERN_TEST_BAD_PLUGIN_DIR
/* the quickstart cut to a few seconds: what these tests check is the run
 * directory, not learning (tests/cli/test_run.c checks that) */
#define SHORT "-o trainer.steps=2 -o trainer.sft.steps=2 -o eval.limit=4"

Test(cli, version_and_help)
{
    result r;
    run(&r, "%s version", TERN);
    cr_expect_eq(r.code, 0);
    char abi[64];
    snprintf(abi, sizeof abi, "plugin ABI %d.%d", TERN_ABI_MAJOR, TERN_ABI_MINOR);
    cr_expect(strstr(r.out, abi), "%s", r.out);
    run(&r, "%s help check", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "usage: tern check CONFIG"), "%s", r.out);
    /* help works for every subcommand path, and says what is wrong with one
     * that is not */
    const char *paths[][2] = {{"reward score", "usage: tern reward score --plugin NAME"},
                              {"data arith", "usage: tern data arith"},
                              {"data countdown", "tern data countdown [--seed S]"},
                              {"data shapes", "tern data shapes [--seed S]"},
                              {"model init", "usage: tern model init --preset NAME"}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        run(&r, "%s help %s", TERN, paths[i][0]);
        cr_expect_eq(r.code, 0, "help %s: %s", paths[i][0], r.err);
        cr_expect(strstr(r.out, paths[i][1]), "help %s: %s", paths[i][0], r.out);
    }
    run(&r, "%s help reward frob", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "tern: no command 'reward frob'; see tern help reward"), "%s", r.err);
    run(&r, "%s help version x", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "'version' has no subcommands"), "%s", r.err);
    run(&r, "%s help data arith extra", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "unexpected argument 'extra'"), "%s", r.err);
}

/* a mistyped command or subcommand gets the nearest name, as config keys do */
Test(cli, a_typo_gets_did_you_mean)
{
    result r;
    run(&r, "%s chek a.cfg", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "tern: unknown command 'chek' (did you mean 'check'?)"), "%s", r.err);
    run(&r, "%s model innit", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "unknown subcommand 'model innit' (did you mean 'model init'?)"), "%s",
              r.err);
    run(&r, "%s help tmieline", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "no command 'tmieline' (did you mean 'timeline'?)"), "%s", r.err);
    run(&r, "%s help reward scroe", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "no command 'reward scroe' (did you mean 'reward score'?)"), "%s",
              r.err);
}

Test(cli, usage_errors_exit_2)
{
    result r;
    run(&r, "%s", TERN);
    cr_expect_eq(r.code, 2);
    run(&r, "%s frobnicate", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "unknown command 'frobnicate'\n"), "no likely name: %s", r.err);
    run(&r, "%s run", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "run needs a config file"), "%s", r.err);
    run(&r, "%s check a.cfg --bogus", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "unknown option '--bogus'"), "%s", r.err);
    run(&r, "%s check a.cfg -o", TERN);
    cr_expect_eq(r.code, 2);
}

Test(cli, plugins_lists_the_build_tree_with_no_environment)
{
    result r;
    run(&r, "%s plugins", TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "synchronous      sync"), "%s", r.out);
    cr_expect(strstr(r.out, "fifo             buffer"), "%s", r.out);
    cr_expect(strstr(r.out, "math             reward"), "%s", r.out);
    cr_expect(strstr(r.out, "/lib/tern/abi-1"), "%s", r.out);
    cr_expect_null(strstr(r.out, "refused:"), "%s", r.out);
}

Test(cli, plugins_shows_refused_files_on_the_environment_path)
{
    result r;
    run(&r, "TERN_PLUGIN_PATH=%s/abi_major:%s/missing_op %s plugins", BAD, BAD, TERN);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "refused:"), "%s", r.out);
    cr_expect(strstr(r.out, BAD "/abi_major/abi_major.so: refused: built for ABI major 2"), "%s",
              r.out);
    cr_expect(strstr(r.out, BAD "/missing_op/missing_op.so: refused: plugin 'missing_op' lacks "
                            "the required op 'get'"),
              "%s", r.out);
}

/* --plugin-dir searches a directory first, as `tern reward score --plugin-dir`
 * does, so the hint of a plugin that is not found leads somewhere. */
Test(cli, plugins_takes_a_plugin_dir_like_reward_score)
{
    result r;
    run(&r, "%s plugins --plugin-dir %s/abi_major", TERN, BAD);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "search path:\n  " BAD "/abi_major\n"), "first: %s", r.out);
    cr_expect(strstr(r.out, BAD "/abi_major/abi_major.so: refused: built for ABI major 2"), "%s",
              r.out);
    run(&r, "%s reward score --plugin abi_major --plugin-dir %s/abi_major < /dev/null", TERN, BAD);
    cr_expect_eq(r.code, 2, "%s", r.err);
    run(&r, "%s reward score --plugin nosuch --plugin-dir %s/abi_major < /dev/null", TERN, BAD);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "`tern plugins` with the same --config or --plugin-dir says why"),
              "%s", r.err);
    run(&r, "%s plugins --plugin-dir", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "--plugin-dir needs a value"), "%s", r.err);
}

Test(cli, check_reports_typos_with_file_line_and_exits_2)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/typo.cfg", TERN_TEST_WORK_DIR);
    write_file(cfg, "run = { name = \"t\"; };\n"
                    "sync = {\n"
                    "  plugin = \"synchronous\";\n"
                    "  sync_intervl = 2;\n"
                    "};\n");
    result r;
    run(&r, "%s check %s", TERN, cfg);
    cr_expect_eq(r.code, 2);
    char want[700];
    snprintf(want, sizeof want,
             "%s:4: unknown key 'sync_intervl' in sync (did you mean 'interval'?)", cfg);
    cr_expect(strstr(r.err, want), "%s", r.err);
}

Test(cli, check_valid_config_prints_what_would_run)
{
    result r;
    run(&r, "%s check %s/etc/quickstart.cfg", TERN, SRC);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "synchronous 1.0.0"), "%s", r.out);
    cr_expect(strstr(r.out, "interval=1"), "defaults are shown: %s", r.out);
    cr_expect(strstr(r.out, "ok: "), "%s", r.out);
}

Test(cli, check_wrong_kind_and_unknown_plugin)
{
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/kind.cfg", TERN_TEST_WORK_DIR);
    write_file(cfg, "buffer = { plugin = \"synchronous\"; };\nsync = { plugin = \"synchronus\"; };\n");
    result r;
    run(&r, "%s check %s", TERN, cfg);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "'synchronous' is a sync plugin, but buffer needs a buffer plugin"),
              "%s", r.err);
    cr_expect(strstr(r.err, ":2: sync.plugin: no sync plugin named 'synchronus' on the plugin "
                            "search path (did you mean 'synchronous'?)"),
              "%s", r.err);
}

Test(cli, check_missing_file_and_syntax_error)
{
    result r;
    run(&r, "%s check /nonexistent/x.cfg", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "/nonexistent/x.cfg: cannot read config file"), "%s", r.err);
    char cfg[512];
    snprintf(cfg, sizeof cfg, "%s/syntax.cfg", TERN_TEST_WORK_DIR);
    write_file(cfg, "run = {\n  name = \"a\";\n  seed = = 3;\n};\n");
    run(&r, "%s check %s", TERN, cfg);
    cr_expect_eq(r.code, 2);
    char want[600];
    snprintf(want, sizeof want, "%s:3: syntax error", cfg);
    cr_expect(strstr(r.err, want), "%s", r.err);
}

Test(cli, check_refuses_a_fifo_bad_overrides_and_includes_clearly)
{
    char dir[512], cfg[600], want[1200];
    snprintf(dir, sizeof dir, "%s/cli_input_XXXXXX", TERN_TEST_WORK_DIR);
    cr_assert_not_null(mkdtemp(dir));
    result r;
    /* a FIFO as the tasks file hung for ever; `timeout` ends it if it still does */
    run(&r, "mkfifo %s/f.jsonl && timeout 20 %s check %s/etc/quickstart.cfg -o data.train=%s/f.jsonl",
        dir, TERN, SRC, dir);
    cr_expect_eq(r.code, 2, "%s", r.err);
    snprintf(want, sizeof want, "%s/f.jsonl: cannot open: not a regular file but a FIFO (named "
             "pipe); give a tasks file (JSON Lines)", dir);
    cr_expect(strstr(r.err, want), "%s", r.err);

    run(&r, "%s check %s/etc/quickstart.cfg -o run.seed=99999999999999999999999", TERN, SRC);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "-o run.seed=99999999999999999999999: 99999999999999999999999 is out "
                            "of range for an integer: give one from -9223372036854775808 to "
                            "9223372036854775807"), "%s", r.err);
    run(&r, "%s check %s/etc/quickstart.cfg -o .=1", TERN, SRC);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "-o .=1: the key path '.' has an empty name"), "%s", r.err);

    /* libconfig alone said "input in flex scanner failed" and ended the process */
    snprintf(cfg, sizeof cfg, "%s/inc.cfg", dir);
    write_file(cfg, "run = { name = \"x\"; };\n@include \"sub\"\n");
    run(&r, "mkdir %s/sub && %s check %s", dir, TERN, cfg);
    cr_expect_eq(r.code, 2);
    snprintf(want, sizeof want, "%s:2: cannot include \"sub\" (%s/sub): Is a directory; include a "
             "config file", cfg, dir);
    cr_expect(strstr(r.err, want), "%s", r.err);
    run(&r, "rm -rf %s", dir);
}

Test(cli, check_plugin_rejecting_its_settings)
{
    result r;
    run(&r, "%s check %s/etc/quickstart.cfg -o sync.offset=1", TERN, SRC);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "-o sync.offset=1: sync.offset: synchronous runs with offset 0"),
              "%s", r.err);
}

Test(cli, run_creates_the_run_directory)
{
    result r;
    run(&r, "%s run %s/etc/quickstart.cfg " SHORT " -o run.out_dir=\\\"runs_cli\\\" -o run.seed=7",
        TERN, SRC);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char dir[1024], path[1200], text[16384];
    snprintf(dir, sizeof dir, "%s/runs_cli/quickstart", TERN_TEST_WORK_DIR);
    cr_expect(strstr(r.out, "runs_cli/quickstart"), "prints its directory: %s", r.out);
    snprintf(path, sizeof path, "%s/config.cfg", dir);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, "seed = 7"), "resolved config keeps the override: %s", text);
    cr_expect(strstr(text, "interval = 1"), "resolved config has defaults: %s", text);
    snprintf(path, sizeof path, "%s/log.txt", dir);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, "run directory"), "%s", text);
    snprintf(path, sizeof path, "%s/trace.json", dir);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, "\"traceEvents\""), "%s", text);

    /* A second run must not overwrite the first. */
    run(&r, "%s run %s/etc/quickstart.cfg " SHORT " -o run.out_dir=\\\"runs_cli\\\"", TERN, SRC);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "runs_cli/quickstart-2"), "%s", r.out);
    run(&r, "rm -rf runs_cli");
}

Test(cli, run_refuses_a_bad_config_without_creating_anything)
{
    result r;
    run(&r, "%s run %s/etc/quickstart.cfg -o run.out_dir=\\\"runs_bad\\\" -o run.sed=2", TERN,
        SRC);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "unknown key 'sed' in run (did you mean 'seed'?)"), "%s", r.err);
    struct stat st;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/runs_bad", TERN_TEST_WORK_DIR);
    cr_expect_neq(stat(dir, &st), 0, "no run directory for a refused config");
}

/* The example in docs/plugins.md builds against the SDK headers alone (no
 * libtern), exports only its entry point, and tern loads and runs it. */
Test(cli, plugin_guide_example_builds_out_of_tree_and_loads)
{
    result r;
    run(&r,
        "mkdir -p guide && sed -n '/^```c$/,/^```$/p' %s/docs/plugins.md | sed '1d;$d' "
        "> guide/newest.c && cc -std=c17 -Wall -Wextra -Werror -fPIC -fvisibility=hidden "
        "-shared -I%s/core/include -o guide/newest.so guide/newest.c && "
        "nm -D --defined-only guide/newest.so | grep -c ' T '",
        SRC, SRC);
    cr_assert_eq(r.code, 0, "exit %d: %s%s", r.code, r.out, r.err);
    cr_expect_eq(atoi(r.out), 1, "exports exactly one function: %s", r.out);
    write_file(TERN_TEST_WORK_DIR "/guide/newest.cfg",
               "plugin_path = [\".\"];\nsync = { plugin = \"newest\"; every = 2; };\n");
    run(&r, "%s check --plugins-only guide/newest.cfg", TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "newest 0.1.0"), "%s", r.out);
    cr_expect(strstr(r.out, "every=2"), "%s", r.out);
    /* a plugin's config alone is no run: plain check refuses it as run does */
    run(&r, "%s check guide/newest.cfg", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "data.train: a run needs training tasks"), "%s", r.err);
    cr_expect(strstr(r.err, "tern check --plugins-only guide/newest.cfg"), "%s", r.err);
    run(&r, "rm -rf guide");
}

Test(cli, run_exit_codes_for_runtime_and_config_failures)
{
    result r;
    /* a directory that cannot be created: a runtime failure */
    run(&r, "%s run %s/etc/quickstart.cfg -o run.out_dir=\\\"/proc/tern-cannot-exist\\\"", TERN,
        SRC);
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "/proc/tern-cannot-exist: cannot create directory"), "%s", r.err);
    /* a run name that cannot name a directory: a config error */
    run(&r, "%s run %s/etc/quickstart.cfg -o run.out_dir=\\\"runs_names\\\" -o "
            "run.name=\\\"a/b\\\"",
        TERN, SRC);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "-o run.name=\"a/b\": run.name: 'a/b' cannot name a directory"),
              "%s", r.err);
    struct stat st;
    cr_expect_neq(stat(TERN_TEST_WORK_DIR "/runs_names", &st), 0, "nothing created");
    run(&r, "%s check %s/etc/quickstart.cfg -o run.name=\\\"..\\\"", TERN, SRC);
    cr_expect_eq(r.code, 2, "check refuses it too: %s", r.err);
}
