/* mode_rules.c: see mode_rules.h. */
#include "mode_rules.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR


const mode modes[6] = {
    {"synchronous", 1, 1, 0, -1, 1, "memory"},
    {"one_step_off", 1, 1, 1, -1, 1, "memory"},
    {"fully_async", 0, 1, 0, 4, 1, "checkpoint"},
    {"multi_explorer", 0, 1, 0, 4, 2, "checkpoint"},
    {"interval4_offset0", 1, 4, 0, -1, 1, "memory"},
    {"interval1_offset4", 1, 1, 4, -1, 1, "memory"},
};

static long fixed_version(long k, long I, long O)
{
    long d = k - O;
    return d < 0 ? 0 : I * (d / I);
}

static const char *lane_of(json_t *events, json_int_t tid)
{
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        if (strcmp(json_string_value(json_object_get(e, "ph")), "M") == 0 &&
            json_integer_value(json_object_get(e, "tid")) == tid)
            return json_string_value(json_object_get(json_object_get(e, "args"), "name"));
    }
    return "";
}

/* Lane `lane` is the role's: "ROLE", or on ranks "ROLE (rank N)". */
static int lane_is(const char *lane, const char *role, int ranks)
{
    size_t n = strlen(role);
    if (strncmp(lane, role, n) != 0)
        return 0;
    return ranks ? strncmp(lane + n, " (rank ", 7) == 0 : lane[n] == 0;
}

static long arg_int(json_t *e, const char *key)
{
    json_t *v = json_object_get(json_object_get(e, "args"), key);
    cr_assert(json_is_integer(v), "event %s has no integer args.%s",
              json_string_value(json_object_get(e, "name")), key);
    return (long)json_integer_value(v);
}

/* Every RL line of run directory `dir`'s metrics.jsonl reports the reward
 * figures of exactly one batch: 16 tasks x 8 responses in etc/modes/. Returns
 * the number of RL lines. */
int check_reward_counts(const char *what, const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s: %s", what, path);
    char line[16384];
    int rl = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        cr_assert_not_null(o, "%s: %s: not JSON: %s", what, path, line);
        if (json_object_get(o, "reward_mean")) {
            rl++;
            json_int_t step = json_integer_value(json_object_get(o, "step"));
            json_t *n = json_object_get(o, "reward/accuracy.count");
            cr_expect(json_is_integer(n), "%s: step %lld has no reward/accuracy.count", what,
                      (long long)step);
            cr_expect_eq(json_integer_value(n), 16 * 8, "%s: step %lld reports the reward of "
                         "%lld responses, its batch has %d", what, (long long)step,
                         (long long)json_integer_value(n), 16 * 8);
        }
        json_decref(o);
    }
    fclose(f);
    return rl;
}

void check_mode_on(const mode *m, int ranks)
{
    char cmd[4096], run_name[96], launcher[2200] = "";
    result r;
    const char *work = test_work_dir();
    snprintf(run_name, sizeof run_name, "%s%s", m->name, ranks ? "_on_ranks" : "");
    if (ranks)
        snprintf(launcher, sizeof launcher, "%s -np %d ", test_mpirun(), ranks);
    snprintf(cmd, sizeof cmd,
             "cd %s && rm -rf modes_test/%s && %s%s run %s/etc/modes/%s.cfg -o 'run.out_dir=\"modes_test\"' "
             "-o run.name='\"%s\"' -o trainer.steps=%d -o trainer.sft.steps=0 "
             "-o eval.every=0 -o eval.limit=8 -o trainer.save_every=0 "
             "-o buffer.capacity=65536",
             work, run_name, launcher, TERN, SRC, m->name, run_name, MODE_STEPS);
    run(&r, "%s", cmd);
    cr_assert_eq(r.code, 0, "%s: exit %d\n%s", run_name, r.code, r.err);
    /* on ranks a lane is "ROLE (rank N)", and weights in memory go by MPI */
    const char *method = ranks && strcmp(m->method, "memory") == 0 ? "mpi" : m->method;

    char path[1024];
    snprintf(path, sizeof path, "%s/modes_test/%s", work, run_name);
    cr_expect_eq(check_reward_counts(run_name, path), MODE_STEPS, "%s: one RL line per step",
                 run_name);
    snprintf(path, sizeof path, "%s/modes_test/%s/trace.json", work, run_name);
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    cr_assert_not_null(root, "%s: %s", path, err.text);
    json_t *ev = json_object_get(root, "traceEvents");
    cr_assert(json_is_array(ev));

    /* what happened to each batch, by index (MODE_STEPS plus stand-ins for skips) */
    enum { MAXB = 256 };
    long version[MAXB], explorer_of[MAXB], trained_at[MAXB];
    double put_ts[MAXB];
    for (int i = 0; i < MAXB; i++)
        version[i] = explorer_of[i] = trained_at[i] = -1, put_ts[i] = -1;
    double train_ts[MODE_STEPS];
    long train_batch[MODE_STEPS], train_version[MODE_STEPS];
    for (int i = 0; i < MODE_STEPS; i++)
        train_ts[i] = -1;
    int explorer_waits = 0, syncs = 0, skips = 0;
    char first_wait[160] = "";

    size_t i;
    json_t *e;
    json_array_foreach(ev, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *ph = json_string_value(json_object_get(e, "ph"));
        if (strcmp(ph, "M") == 0)
            continue;
        double ts = json_number_value(json_object_get(e, "ts"));
        const char *lane = lane_of(ev, json_integer_value(json_object_get(e, "tid")));
        if (strcmp(name, "rollout") == 0) {
            long k = arg_int(e, "batch"), x = arg_int(e, "explorer");
            cr_assert(k >= 0 && k < MAXB, "%s: batch %ld", m->name, k);
            cr_expect_eq(version[k], -1, "%s: batch %ld generated twice", m->name, k);
            version[k] = arg_int(e, "version");
            explorer_of[k] = x;
            char want[32];
            snprintf(want, sizeof want, "explorer %ld", x);
            cr_expect(lane_is(lane, want, ranks), "%s: batch %ld's rollout on lane '%s'",
                      m->name, k, lane);
            cr_expect(x >= 0 && x < m->explorers, "%s: explorer %ld", m->name, x);
        } else if (strcmp(name, "put") == 0) {
            long k = arg_int(e, "batch");
            cr_assert(k >= 0 && k < MAXB);
            cr_expect_str_eq(lane, "buffer");
            put_ts[k] = ts;
        } else if (strcmp(name, "train") == 0) {
            long t = arg_int(e, "step");
            cr_assert(t >= 0 && t < MODE_STEPS, "%s: step %ld", m->name, t);
            cr_expect_lt(train_ts[t], 0, "%s: step %ld trained twice", m->name, t);
            json_t *a = json_object_get(e, "args");
            json_t *bs = json_object_get(a, "batches"), *vs = json_object_get(a, "versions");
            cr_assert(json_is_array(bs) && json_array_size(bs) == 1 && json_is_array(vs) &&
                      json_array_size(vs) == 1, "%s: step %ld: batches/versions", m->name, t);
            train_ts[t] = ts;
            train_batch[t] = (long)json_integer_value(json_array_get(bs, 0));
            train_version[t] = (long)json_integer_value(json_array_get(vs, 0));
            cr_expect(lane_is(lane, "trainer", ranks), "%s: step %ld on lane '%s'", m->name,
                      t, lane);
        } else if (strcmp(name, "wait") == 0) {
            json_t *a = json_object_get(e, "args");
            cr_expect(json_is_string(json_object_get(a, "for")), "%s: a wait says what for",
                      m->name);
            /* the asynchronous modes' own rule: no wait for weights. A wait
             * for a batch says how fast the master deals, not the mode: it
             * deals on hearing a rollout (on ranks a message away) and not
             * while it evaluates (seen under ASan on a loaded machine: an
             * explorer 22 ms without a batch during the evaluation before RL)
             * or while it holds batches back (max_staleness); nor does a wait
             * for the "delivery of weights" the trainer has published already
             * (a checkpoint file being written: the transport, not the mode) */
            const char *what = json_string_value(json_object_get(a, "for"));
            int counted = what && strncmp(what, "weights", 7) == 0;
            if (json_object_get(a, "explorer") && counted && explorer_waits++ == 0)
                snprintf(first_wait, sizeof first_wait, "for %s, %.0f us at %.0f us",
                         json_string_value(json_object_get(a, "for")),
                         json_number_value(json_object_get(e, "dur")), ts);
        } else if (strcmp(name, "sync") == 0) {
            syncs++;
            cr_expect_str_eq(json_string_value(json_object_get(json_object_get(e, "args"),
                                                               "method")), method,
                             "%s: sync method", m->name);
        } else if (strcmp(name, "skip") == 0) {
            skips++;
        }
    }

    cr_expect_gt(syncs, MODE_STEPS / m->interval, "%s: weight syncs are traced", m->name);
    for (long t = 0; t < MODE_STEPS; t++) {
        cr_assert_geq(train_ts[t], 0, "%s: step %ld never trained", m->name, t);
        long k = train_batch[t];
        cr_assert(k >= 0 && k < MAXB, "%s: step %ld batch %ld", m->name, t, k);
        cr_expect_eq(trained_at[k], -1, "%s: batch %ld trained twice", m->name, k);
        trained_at[k] = t;
        cr_expect_eq(train_version[t], version[k], "%s: step %ld says batch %ld had version "
                     "%ld, its rollout says %ld", m->name, t, k, train_version[t], version[k]);
        cr_expect(put_ts[k] >= 0 && put_ts[k] <= train_ts[t], "%s: step %ld (at %.0f us) "
                  "started before batch %ld was in the buffer (at %.0f us)", m->name, t,
                  train_ts[t], k, put_ts[k]);
        long stale = t - train_version[t];
        cr_expect_geq(stale, 0, "%s: step %ld trained on future weights", m->name, t);
        if (m->fixed) {
            cr_expect_eq(k, t, "%s: a fixed schedule trains batch t at step t", m->name);
            cr_expect_leq(stale, m->offset + m->interval - 1, "%s: step %ld staleness %ld",
                          m->name, t, stale);
            if (t >= m->offset)
                cr_expect_geq(stale, m->offset, "%s: step %ld staleness %ld", m->name, t, stale);
        } else if (m->max_staleness >= 0) {
            cr_expect_leq(stale, m->max_staleness, "%s: step %ld staleness %ld", m->name, t,
                          stale);
        }
    }
    for (long k = 0; k < MAXB; k++) {
        if (version[k] < 0)
            continue;
        if (m->fixed)
            cr_expect_eq(version[k], fixed_version(k, m->interval, m->offset),
                         "%s: batch %ld generated with version %ld, v(k) = %ld", m->name, k,
                         version[k], fixed_version(k, m->interval, m->offset));
    }
    if (m->fixed) {
        cr_expect_eq(skips, 0, "%s: a fixed schedule never skips", m->name);
        if (m->offset == 0 && m->interval == 1)
            cr_expect_gt(explorer_waits, 0, "%s: the synchronous explorer waits for weights",
                         m->name);
    } else {
        cr_expect_eq(explorer_waits, 0, "%s: an explorer waited in an asynchronous mode "
                     "(%d times; the first %s)", m->name, explorer_waits, first_wait);
        /* max_staleness holds the explorers back (docs/sync.md): with
         * interval 1 no batch is ever too stale, so none is dropped */
        if (m->max_staleness >= 0 && m->interval == 1)
            cr_expect_eq(skips, 0, "%s: %d groups skipped as too stale: the master should "
                         "have held the explorers back", m->name, skips);
    }
    if (m->explorers > 1) {
        int used[64] = {0};
        for (long k = 0; k < MAXB; k++)
            if (explorer_of[k] >= 0 && explorer_of[k] < 64)
                used[explorer_of[k]] = 1;
        for (int x = 0; x < m->explorers; x++)
            cr_expect(used[x], "%s: explorer %d generated nothing", m->name, x);
    }
    json_decref(root);
}

