/* test_run_buffers.c: the buffer plugins in a real run (`tern run`): the
 * durable `sqlite` buffer carries a whole run and is left empty; a buffer
 * file holding experiences of an earlier run is refused, and kept; without a
 * path its file lives in the run directory; a replay buffer (`priority`)
 * runs, using a group at most max_uses times. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "command.h"
#include "experience/experience.h"
#include "harness.h"
#include "tern/buffer.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR

/* the quickstart cut to seconds, without its dynamic sampling: these tests
 * name the batches each step trains, which stand-ins for filtered groups
 * would shift */
#define SHORT                                                                                  \
    "-o trainer.steps=3 -o trainer.sft.steps=2 -o eval.limit=4 -o algorithm.filter_groups=false"
#define SQLITE "-o buffer.plugin=sqlite -o buffer.capacity=0 -o 'buffer.path=\"%s\"'"

/* Records left in the sqlite buffer file at `path`. */
static unsigned long long held_in(const char *path)
{
    harness h;
    char settings[600];
    snprintf(settings, sizeof settings, "path = \"%s\";", path);
    cr_assert_eq(harness_open(&h, "sqlite", TERN_KIND_BUFFER, settings), TERN_OK, "%s",
                 h.error);
    const tern_buffer_ops *ops = harness_ops(&h);
    tern_buffer_stats st = {.size = sizeof st};
    cr_assert_eq(ops->stats(h.state, &st), TERN_OK);
    harness_close(&h);
    return (unsigned long long)st.held;
}

Test(run_buffers, sqlite_carries_a_run_and_is_left_empty, .timeout = 120)
{
    char file[600];
    snprintf(file, sizeof file, "%s/run_buffers_ok.sqlite", WORK);
    remove(file);
    result r;
    run(&r, "cd %s && rm -rf rb/ok && %s run %s/etc/quickstart.cfg %s " SQLITE
            " -o 'run.out_dir=\"rb\"' -o 'run.name=\"ok\"'",
        WORK, TERN, SRC, SHORT, file);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char metrics[65536];
    char path[700];
    snprintf(path, sizeof path, "%s/rb/ok/metrics.jsonl", WORK);
    slurp(path, metrics, sizeof metrics);
    cr_expect(strstr(metrics, "\"stage\":\"rl\",\"step\":3"), "%s", metrics);
    cr_expect_eq(held_in(file), 0, "a finished synchronous run consumed every experience");
    remove(file);
}

Test(run_buffers, a_buffer_file_with_earlier_experiences_is_refused_and_kept, .timeout = 60)
{
    char file[600];
    snprintf(file, sizeof file, "%s/run_buffers_left.sqlite", WORK);
    remove(file);
    harness h;
    char settings[700];
    snprintf(settings, sizeof settings, "path = \"%s\";", file);
    cr_assert_eq(harness_open(&h, "sqlite", TERN_KIND_BUFFER, settings), TERN_OK, "%s",
                 h.error);
    const tern_buffer_ops *ops = harness_ops(&h);
    tern_record_meta m = {.size = sizeof m, .id = 1, .version = 0, .batch = 0};
    cr_assert_eq(ops->put(h.state, "x", 1, &m, 0), TERN_OK);
    harness_close(&h);

    result r;
    run(&r, "cd %s && rm -rf rb/left && %s run %s/etc/quickstart.cfg %s " SQLITE
            " -o 'run.out_dir=\"rb\"' -o 'run.name=\"left\"'",
        WORK, TERN, SRC, SHORT, file);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "already holds 1 group from an earlier run"), "%s", r.err);
    cr_expect(strstr(r.err, "--resume"), "%s", r.err);
    cr_expect(strstr(r.err, "remove the buffer's file"), "%s", r.err);
    cr_expect_eq(held_in(file), 1, "the refused run leaves the file as it was");
    remove(file);
}

/* A replay buffer in a run: the trainer takes its best groups, each up to
 * max_uses times; every step trains batch_tasks groups. */
Test(run_buffers, a_replay_buffer_runs_and_uses_a_group_at_most_max_uses_times, .timeout = 60)
{
    result r;
    run(&r, "cd %s && rm -rf rb/replay && %s run %s/etc/quickstart.cfg %s "
            "-o buffer.plugin=priority -o buffer.max_uses=2 "
            "-o 'run.out_dir=\"rb\"' -o 'run.name=\"replay\"'",
        WORK, TERN, SRC, SHORT);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char path[700], text[262144];
    snprintf(path, sizeof path, "%s/rb/replay/metrics.jsonl", WORK);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, "\"stage\":\"rl\",\"step\":3,"), "%s", text);
    snprintf(path, sizeof path, "%s/rb/replay/rollouts.jsonl", WORK);
    slurp(path, text, sizeof text);
    int uses[64][64] = {{0}}, lines = 0;
    for (const char *p = text; (p = strstr(p, "\"batch\":")); p++) {
        int b = -1, g = -1;
        cr_assert_eq(sscanf(p, "\"batch\":%d,\"group\":%d", &b, &g), 2, "%.80s", p);
        cr_assert(b >= 0 && b < 64 && g >= 0 && g < 64);
        uses[b][g]++;
        cr_expect_leq(uses[b][g], 2, "batch %d group %d trained more than max_uses times", b,
                      g);
        lines++;
    }
    cr_expect_eq(lines, 3 * 16, "3 steps of 16 groups: %d lines", lines);
}

/* Without `path`, a run keeps the sqlite buffer's file in its run directory
 * (config.cfg says where), so --resume finds that same file again; `tern
 * check` names the file and creates nothing. */
Test(run_buffers, sqlite_defaults_its_file_into_the_run_directory, .timeout = 120)
{
    char dir[600], path[800], text[16384];
    snprintf(dir, sizeof dir, "%s/rb_default_XXXXXX", WORK);
    cr_assert_not_null(mkdtemp(dir));
    const char *opts = "-o buffer.plugin=sqlite -o buffer.capacity=0 -o 'run.out_dir=\"rb\"' "
                       "-o 'run.name=\"def\"'";
    result r;
    run(&r, "cd %s && %s check %s/etc/quickstart.cfg %s %s", dir, TERN, SRC, SHORT, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "path=\"rb/def/buffer.sqlite\" (in the run directory, made when "
                            "the run starts)"), "%s", r.out);
    struct stat st;
    snprintf(path, sizeof path, "%s/rb", dir);
    cr_expect_neq(stat(path, &st), 0, "check created no run directory");

    run(&r, "cd %s && %s run %s/etc/quickstart.cfg %s %s", dir, TERN, SRC, SHORT, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(path, sizeof path, "%s/rb/def/config.cfg", dir);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, "path = \"rb/def/buffer.sqlite\""), "config.cfg: %s", text);
    char file[800];
    snprintf(file, sizeof file, "%s/rb/def/buffer.sqlite", dir);
    cr_assert_eq(stat(file, &st), 0, "the buffer's file is in the run directory");
    cr_expect_eq(held_in(file), 0, "a finished synchronous run consumed every experience");

    /* the resumed run opens the same file: a group left there is found (an
     * id no step of the run consumed: the finished run trains nothing more,
     * and keeps it) */
    harness h;
    char settings[900];
    snprintf(settings, sizeof settings, "path = \"%s\";", file);
    cr_assert_eq(harness_open(&h, "sqlite", TERN_KIND_BUFFER, settings), TERN_OK, "%s",
                 h.error);
    const tern_buffer_ops *ops = harness_ops(&h);
    tern_record_meta m = {.size = sizeof m, .id = 9999, .version = 0, .batch = 624};
    cr_assert_eq(ops->put(h.state, "x", 1, &m, 0), TERN_OK);
    harness_close(&h);
    run(&r, "cd %s && %s run --resume %s/etc/quickstart.cfg %s %s", dir, TERN, SRC, SHORT, opts);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "buffer: 1 group from before the stop to train"), "%s", r.err);
    cr_expect_eq(held_in(file), 1, "the group is kept");
    run(&r, "rm -rf '%s'", dir);
}

/* A buffer file holding a group the checkpoint says was trained on, one the
 * resume does not commit itself (consumed before the checkpoint before),
 * is another run's (or an old copy): refused, as training it again would
 * train it twice. */
Test(run_buffers, a_resume_refuses_a_file_with_groups_already_trained, .timeout = 120)
{
    char dir[600], file[800];
    snprintf(dir, sizeof dir, "%s/rb_stray_XXXXXX", WORK);
    cr_assert_not_null(mkdtemp(dir));
    const char *opts = "-o buffer.plugin=sqlite -o buffer.capacity=0 -o 'run.out_dir=\"rb\"' "
                       "-o 'run.name=\"stray\"' -o trainer.save_every=1";
    result r;
    run(&r, "cd %s && %s run %s/etc/quickstart.cfg %s %s", dir, TERN, SRC, SHORT, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(file, sizeof file, "%s/rb/stray/buffer.sqlite", dir);
    harness h;
    char settings[900];
    snprintf(settings, sizeof settings, "path = \"%s\";", file);
    cr_assert_eq(harness_open(&h, "sqlite", TERN_KIND_BUFFER, settings), TERN_OK, "%s",
                 h.error);
    const tern_buffer_ops *ops = harness_ops(&h);
    /* batch 0's group 1: trained at step 1, committed after checkpoint 1 */
    tern_record_meta m = {.size = sizeof m, .id = 1, .version = 0, .batch = 0};
    cr_assert_eq(ops->put(h.state, "x", 1, &m, 0), TERN_OK);
    harness_close(&h);
    run(&r, "cd %s && %s run --resume %s/etc/quickstart.cfg %s %s", dir, TERN, SRC, SHORT, opts);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "holds 1 group the checkpoint says were trained on already"), "%s",
              r.err);
    cr_expect(strstr(r.err, "give the run its own buffer.path"), "%s", r.err);
    cr_expect_eq(held_in(file), 1, "the refused resume leaves the group in the file");
    run(&r, "rm -rf '%s'", dir);
}

/* Groups a buffer discards (a small `fifo` dropping its oldest) are dealt
 * again as stand-ins: an asynchronous run still gets its groups and ends. */
Test(run_buffers, groups_a_buffer_drops_are_replaced_and_the_run_ends, .timeout = 120)
{
    result r;
    run(&r, "cd %s && rm -rf rb/dropping && %s run %s/etc/quickstart.cfg %s "
            "-o buffer.capacity=4 -o 'buffer.when_full=\"drop_oldest\"' "
            "-o 'sync.plugin=\"fully_async\"' -o 'sync.method=\"memory\"' "
            "-o 'run.out_dir=\"rb\"' -o 'run.name=\"dropping\"'",
        WORK, TERN, SRC, SHORT);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char path[700], text[262144];
    snprintf(path, sizeof path, "%s/rb/dropping/metrics.jsonl", WORK);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, "\"stage\":\"rl\",\"step\":3,"), "%s", text);
    cr_expect(strstr(text, "\"buffer.dropped.count\""), "the drops are counted: %s", text);
    run(&r, "rm -rf %s/rb/dropping", WORK);
}

/* A small capacity on sqlite: the groups a run has taken stay in the file
 * until its next checkpoint, and must not hold the explorer back (a capacity
 * that counted them would stop the run once batch_tasks x the steps between
 * checkpoints groups were taken). */
Test(run_buffers, sqlite_with_a_small_capacity_runs_between_checkpoints, .timeout = 120)
{
    result r;
    run(&r, "cd %s && rm -rf rb/small && %s run %s/etc/quickstart.cfg %s -o trainer.steps=6 "
            "-o trainer.save_every=0 -o buffer.plugin=sqlite -o buffer.capacity=16 "
            "-o 'run.out_dir=\"rb\"' -o 'run.name=\"small\"'",
        WORK, TERN, SRC, SHORT);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char path[700], text[262144];
    snprintf(path, sizeof path, "%s/rb/small/metrics.jsonl", WORK);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, "\"stage\":\"rl\",\"step\":6,"), "%s", text);
    run(&r, "rm -rf %s/rb/small", WORK);
}

/* Put a made-up group (8 responses of 2 tokens, task 3) for slot `slot` of
 * batch `batch`, made by weights `version`, into the sqlite file `file`. */
static void put_made_up_group(const char *file, int64_t batch, uint32_t slot, int64_t version)
{
    enum { G = 8 };
    int32_t prompt[3] = {1, 20, 21}, tok[2] = {22, 2};
    float logp[2] = {-1.5f, -0.5f};
    tern_exp_response resp[G];
    for (int i = 0; i < G; i++)
        resp[i] = (tern_exp_response){.version = version, .finish = 1, .reward = i % 2,
                                      .accuracy = i % 2, .len = 2, .tokens = tok, .logp = logp};
    tern_experience e = {.batch = batch, .version = version, .task_index = 3, .group = slot,
                         .domain = "math", .task_id = "t", .prompt_len = 3, .prompt = prompt,
                         .n = G, .resp = resp};
    tern_experience_finish_stats(&e);
    size_t len = tern_experience_bytes(&e);
    cr_assert_gt(len, 0);
    unsigned char *buf = malloc(len);
    cr_assert_not_null(buf);
    tern_experience_encode(&e, buf);
    harness h;
    char settings[900];
    snprintf(settings, sizeof settings, "path = \"%s\";", file);
    cr_assert_eq(harness_open(&h, "sqlite", TERN_KIND_BUFFER, settings), TERN_OK, "%s",
                 h.error);
    const tern_buffer_ops *ops = harness_ops(&h);
    tern_record_meta m = {.size = sizeof m, .id = (uint64_t)batch * 16 + slot,
                          .version = version, .batch = batch};
    cr_assert_eq(ops->put(h.state, buf, len, &m, 0), TERN_OK);
    harness_close(&h);
    free(buf);
}

/* A group a durable buffer kept from weights newer than the checkpoint (an
 * explorer of a killed run loaded a version the kill lost) is trained as
 * fresh after the resume, not refused as "newer than the trainer". */
Test(run_buffers, a_held_group_from_lost_newer_weights_is_trained, .timeout = 120)
{
    char dir[600], file[800];
    snprintf(dir, sizeof dir, "%s/rb_newer_XXXXXX", WORK);
    cr_assert_not_null(mkdtemp(dir));
    const char *opts = "-o buffer.plugin=sqlite -o buffer.capacity=0 -o 'run.out_dir=\"rb\"' "
                       "-o 'run.name=\"newer\"' -o 'sync.plugin=\"fully_async\"' "
                       "-o 'sync.method=\"memory\"'";
    result r;
    run(&r, "cd %s && %s run %s/etc/quickstart.cfg %s %s", dir, TERN, SRC, SHORT, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(file, sizeof file, "%s/rb/newer/buffer.sqlite", dir);

    /* group 0 of batch 40, made by "version 9", which this run never had */
    put_made_up_group(file, 40, 0, 9);

    /* one more step: it takes the held group first */
    run(&r, "cd %s && %s run --resume %s/etc/quickstart.cfg %s %s -o trainer.steps=4", dir, TERN,
        SRC, SHORT, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char path[900], text[262144];
    snprintf(path, sizeof path, "%s/rb/newer/rollouts.jsonl", dir);
    slurp(path, text, sizeof text);
    cr_expect(strstr(text, "\"step\":4,\"batch\":40,\"group\":0,\"version\":9"),
              "the held group is trained at step 4: %s", text);
    run(&r, "rm -rf '%s'", dir);
}

/* A batch the buffer holds in part (a kill while the master put its groups):
 * the resume makes the batch again and puts only the groups the buffer does
 * not hold, so the step trains each of the batch's groups once. */
Test(run_buffers, a_resume_puts_only_the_groups_a_partly_held_batch_lacks, .timeout = 120)
{
    char dir[600], file[800];
    snprintf(dir, sizeof dir, "%s/rb_part_XXXXXX", WORK);
    cr_assert_not_null(mkdtemp(dir));
    const char *opts = "-o buffer.plugin=sqlite -o buffer.capacity=0 -o 'run.out_dir=\"rb\"' "
                       "-o 'run.name=\"part\"'";
    result r;
    run(&r, "cd %s && %s run %s/etc/quickstart.cfg %s %s", dir, TERN, SRC, SHORT, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(file, sizeof file, "%s/rb/part/buffer.sqlite", dir);
    for (uint32_t g = 0; g < 8; g++) /* batch 3, the next step's: its first half */
        put_made_up_group(file, 3, g, 3);
    run(&r, "cd %s && %s run --resume %s/etc/quickstart.cfg %s %s -o trainer.steps=4", dir, TERN,
        SRC, SHORT, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    char path[900], text[262144];
    snprintf(path, sizeof path, "%s/rb/part/rollouts.jsonl", dir);
    slurp(path, text, sizeof text);
    int seen[16] = {0}, lines = 0;
    for (const char *p = text; (p = strstr(p, "\"step\":4,\"batch\":")); p++) {
        int b = -1, g = -1;
        cr_assert_eq(sscanf(p, "\"step\":4,\"batch\":%d,\"group\":%d", &b, &g), 2);
        cr_assert(b == 3 && g >= 0 && g < 16, "step 4 trained batch %d group %d", b, g);
        seen[g]++;
        lines++;
    }
    cr_expect_eq(lines, 16, "step 4 trained %d groups", lines);
    for (int g = 0; g < 16; g++)
        cr_expect_eq(seen[g], 1, "batch 3 group %d trained %d times", g, seen[g]);
    run(&r, "rm -rf '%s'", dir);
}

/* Killed after its checkpoint was written but before the master committed
 * the checkpoint's groups: they are still in the file (here, one put back),
 * and the resume commits them before anything else instead of training them
 * again (or refusing the file as another run's). */
Test(run_buffers, a_resume_commits_the_groups_its_checkpoint_consumed, .timeout = 120)
{
    char dir[600], file[800];
    snprintf(dir, sizeof dir, "%s/rb_commit_XXXXXX", WORK);
    cr_assert_not_null(mkdtemp(dir));
    const char *opts = "-o buffer.plugin=sqlite -o buffer.capacity=0 -o 'run.out_dir=\"rb\"' "
                       "-o 'run.name=\"commit\"'";
    result r;
    run(&r, "cd %s && %s run %s/etc/quickstart.cfg %s %s", dir, TERN, SRC, SHORT, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(file, sizeof file, "%s/rb/commit/buffer.sqlite", dir);
    put_made_up_group(file, 2, 0, 2); /* trained at step 3, in checkpoint 3's uncommitted list */
    cr_assert_eq(held_in(file), 1);
    run(&r, "cd %s && %s run --resume %s/etc/quickstart.cfg %s %s", dir, TERN, SRC, SHORT, opts);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "0 groups from before the stop to train"), "%s", r.err);
    cr_expect_eq(held_in(file), 0, "the checkpoint's group was committed");
    run(&r, "rm -rf '%s'", dir);
}
