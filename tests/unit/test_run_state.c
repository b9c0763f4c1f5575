/* test_run_state.c: what a run writes survives a crash, a power loss or a
 * full disk (core/src/loop/run_state.c): a checkpoint is synced file by
 * file, then its directory, renamed, then its parent, and a failure at any
 * of those steps leaves no partial checkpoint; JSON Lines files keep whole
 * lines (a failed append is cut back, a resume drops torn lines); leftovers
 * of a killed run are removed; the SHA-256 that identifies task files. */
#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "base/sha256.h"
#include "loop/run_state.h"
#include "rundir/jsonl_append.h"

static char work[512];

static int rm_entry(const char *p, const struct stat *s, int f, struct FTW *w)
{
    (void)s, (void)f, (void)w;
    return remove(p);
}

static void work_setup(void)
{
    snprintf(work, sizeof work, "%s/run_state_%d", TERN_TEST_WORK_DIR, (int)getpid());
    nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    cr_assert_eq(mkdir(work, 0777), 0, "%s: %s", work, strerror(errno));
}

static void work_teardown(void)
{
    tern_checkpoint_fault = NULL;
    nftw(work, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* WORK/rel */
static const char *at(const char *rel)
{
    static char p[4][1024];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/%s", work, rel);
    return p[i];
}

static void make_dir(const char *rel)
{
    cr_assert_eq(mkdir(at(rel), 0777), 0, "%s: %s", at(rel), strerror(errno));
}

static void put(const char *rel, const char *text, size_t n)
{
    FILE *f = fopen(at(rel), "wb");
    cr_assert_not_null(f, "%s: %s", at(rel), strerror(errno));
    cr_assert_eq(fwrite(text, 1, n, f), n);
    fclose(f);
}

static void put_text(const char *rel, const char *text) { put(rel, text, strlen(text)); }

static int exists(const char *rel)
{
    struct stat st;
    return lstat(at(rel), &st) == 0;
}

static char *slurp(const char *rel)
{
    FILE *f = fopen(at(rel), "rb");
    cr_assert_not_null(f, "%s", at(rel));
    char *buf = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&buf, &n);
    int ch;
    while ((ch = fgetc(f)) != EOF)
        fputc(ch, m);
    fclose(f);
    fclose(m);
    return buf;
}

/* ---- the checkpoint's durability order ------------------------------------ */

/* A checkpoint as the trainer leaves it: policy/ with two files. */
static void make_tmp_checkpoint(void)
{
    if (!exists("checkpoints"))
        make_dir("checkpoints");
    make_dir("checkpoints/step-3.tmp");
    make_dir("checkpoints/step-3.tmp/policy");
    put_text("checkpoints/step-3.tmp/policy/model.safetensors", "weights");
    put_text("checkpoints/step-3.tmp/policy/config.json", "{}");
}

static json_t *a_state(void)
{
    return json_pack("{s:i, s:i, s:i}", "format", 1, "step", 3, "sft_step", 0);
}

/* The operations the seam saw, "op path" each, in order. */
static char ops[64][1200];
static int n_ops, fail_at = -1, fail_errno = EIO;

static int record(const char *op, const char *path)
{
    int i = n_ops++;
    if (i < 64)
        snprintf(ops[i], sizeof ops[i], "%s %s", op, path);
    return i == fail_at ? fail_errno : 0;
}

/* Index of the operation "op WORK/rel", or -1. */
static int op_index(const char *op, const char *rel)
{
    char want[1200];
    snprintf(want, sizeof want, "%s %s", op, at(rel));
    for (int i = 0; i < n_ops && i < 64; i++)
        if (strcmp(ops[i], want) == 0)
            return i;
    return -1;
}

static void complete_recording(void)
{
    n_ops = 0;
    tern_checkpoint_fault = record;
    json_t *st = a_state();
    char final[1024];
    int rc = tern_checkpoint_complete(at("checkpoints/step-3.tmp"), st, final, sizeof final);
    json_decref(st);
    tern_checkpoint_fault = NULL;
    cr_assert_eq(rc, TERN_OK, "%s", tern_error_message());
}

Test(durability, files_then_their_directory_then_rename_then_the_parent, .init = work_setup,
     .fini = work_teardown)
{
    make_tmp_checkpoint();
    complete_recording();
    int state_w = op_index("write", "checkpoints/step-3.tmp/state.json"),
        state_s = op_index("fsync", "checkpoints/step-3.tmp/state.json"),
        model_s = op_index("fsync", "checkpoints/step-3.tmp/policy/model.safetensors"),
        conf_s = op_index("fsync", "checkpoints/step-3.tmp/policy/config.json"),
        policy_s = op_index("fsync", "checkpoints/step-3.tmp/policy"),
        tmp_s = op_index("fsync", "checkpoints/step-3.tmp"),
        ren = op_index("rename", "checkpoints/step-3.tmp"),
        parent_s = op_index("fsync", "checkpoints");
    for (int i = 0; i < n_ops; i++)
        cr_log_info("op %d: %s", i, ops[i]);
    cr_assert(state_w >= 0 && state_s >= 0 && model_s >= 0 && conf_s >= 0 && policy_s >= 0 &&
              tmp_s >= 0 && ren >= 0 && parent_s >= 0, "every step is taken (%d ops)", n_ops);
    cr_expect_lt(state_w, state_s, "state.json is written, then synced");
    cr_expect_lt(model_s, policy_s, "a file before its directory");
    cr_expect_lt(conf_s, policy_s, "a file before its directory");
    cr_expect_lt(policy_s, tmp_s, "policy/ before step-3.tmp");
    cr_expect_lt(state_s, tmp_s, "state.json before step-3.tmp");
    cr_expect_lt(tmp_s, ren, "step-3.tmp is synced before it is renamed");
    cr_expect_lt(ren, parent_s, "checkpoints/ is synced after the rename");
    cr_expect_eq(parent_s, n_ops - 1, "the parent's sync is the last step");
    cr_expect(exists("checkpoints/step-3/state.json"));
    cr_expect(!exists("checkpoints/step-3.tmp"));
}

/* A failure injected at each step in turn: before the rename nothing of the
 * checkpoint is left; at the last sync the checkpoint is whole and in place. */
Test(durability, a_failure_at_any_step_leaves_no_partial_checkpoint, .init = work_setup,
     .fini = work_teardown)
{
    make_tmp_checkpoint();
    complete_recording();
    int total = n_ops, ren = op_index("rename", "checkpoints/step-3.tmp");
    char names[64][1200];
    memcpy(names, ops, sizeof names);
    nftw(at("checkpoints"), rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    for (int k = 0; k < total; k++) {
        make_tmp_checkpoint();
        n_ops = 0;
        fail_at = k;
        fail_errno = k % 2 ? ENOSPC : EIO;
        tern_checkpoint_fault = record;
        json_t *st = a_state();
        char final[1024];
        int rc = tern_checkpoint_complete(at("checkpoints/step-3.tmp"), st, final, sizeof final);
        json_decref(st);
        tern_checkpoint_fault = NULL;
        fail_at = -1;
        const char *msg = tern_error_message();
        cr_expect_eq(rc, TERN_EIO, "a failure at '%s' is an I/O error", names[k]);
        cr_expect(strstr(msg, strerror(fail_errno)), "the cause is said: %s", msg);
        cr_expect(strstr(msg, strchr(names[k], ' ') + 1), "the file is named: %s (failed: %s)",
                  msg, names[k]);
        cr_expect(!exists("checkpoints/step-3.tmp"), "no partial checkpoint after '%s'",
                  names[k]);
        if (k <= ren)
            cr_expect(!exists("checkpoints/step-3"), "not made after a failed '%s'", names[k]);
        else
            cr_expect(exists("checkpoints/step-3/state.json") &&
                      exists("checkpoints/step-3/policy/model.safetensors"),
                      "after the rename the checkpoint is whole (failed: %s)", names[k]);
        nftw(at("checkpoints"), rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
}

Test(durability, a_failed_replace_keeps_the_older_checkpoint, .init = work_setup,
     .fini = work_teardown)
{
    make_dir("checkpoints");
    make_dir("checkpoints/step-3");
    put_text("checkpoints/step-3/old_marker", "old");
    make_tmp_checkpoint();
    complete_recording();
    int ren = op_index("rename", "checkpoints/step-3.tmp");
    cr_assert_geq(ren, 0);
    /* again, the rename of the new one failing */
    nftw(at("checkpoints"), rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    make_dir("checkpoints");
    make_dir("checkpoints/step-3");
    put_text("checkpoints/step-3/old_marker", "old");
    make_tmp_checkpoint();
    n_ops = 0;
    fail_at = ren;
    tern_checkpoint_fault = record;
    json_t *st = a_state();
    char final[1024];
    int rc = tern_checkpoint_complete(at("checkpoints/step-3.tmp"), st, final, sizeof final);
    json_decref(st);
    tern_checkpoint_fault = NULL;
    fail_at = -1;
    cr_expect_eq(rc, TERN_EIO);
    cr_expect(exists("checkpoints/step-3/old_marker"), "the older checkpoint keeps its place");
    cr_expect(!exists("checkpoints/step-3.old"));
    cr_expect(!exists("checkpoints/step-3.tmp"));
}

Test(durability, a_publish_without_the_seam_is_whole, .init = work_setup, .fini = work_teardown)
{
    make_dir("checkpoints");
    make_dir("checkpoints/reference.tmp");
    put_text("checkpoints/reference.tmp/model.safetensors", "weights");
    cr_assert_eq(tern_checkpoint_publish(at("checkpoints/reference.tmp"),
                                         at("checkpoints/reference")), TERN_OK, "%s",
                 tern_error_message());
    cr_expect(exists("checkpoints/reference/model.safetensors"));
    cr_expect(!exists("checkpoints/reference.tmp"));
}

/* ---- JSON Lines ---------------------------------------------------------- */

Test(jsonl, a_torn_last_line_is_dropped_and_the_file_ends_with_a_whole_line,
     .init = work_setup, .fini = work_teardown)
{
    put_text("metrics.jsonl", "{\"stage\":\"sft\",\"step\":1}\n"
                              "{\"stage\":\"rl\",\"step\":1}\n"
                              "{\"stage\":\"rl\",\"step\":2}\n"
                              "{\"stage\":\"rl\",\"step\":3,\"loss\":0.");
    cr_assert_eq(tern_jsonl_truncate(at("metrics.jsonl"), 1, 5), TERN_OK, "%s",
                 tern_error_message());
    char *got = slurp("metrics.jsonl");
    cr_expect_str_eq(got, "{\"stage\":\"sft\",\"step\":1}\n"
                          "{\"stage\":\"rl\",\"step\":1}\n"
                          "{\"stage\":\"rl\",\"step\":2}\n");
    free(got);
}

Test(jsonl, invalid_lines_anywhere_are_dropped_valid_ones_kept, .init = work_setup,
     .fini = work_teardown)
{
    /* a line glued to a torn one (what an older resume made), a blank line,
     * zeros that a power loss leaves, a whole object that lost its newline */
    static const char text[] = "{\"stage\":\"rl\",\"step\":1}\n"
                               "{\"stage\":\"rl\",\"st{\"stage\":\"rl\",\"step\":2}\n"
                               "\n"
                               "{\"stage\":\"rl\",\"step\":3}\n"
                               "\0\0\0\0\n"
                               "[1,2]\n"
                               "{\"stage\":\"rl\",\"step\":4}";
    put("rollouts.jsonl", text, sizeof text - 1);
    cr_assert_eq(tern_jsonl_truncate(at("rollouts.jsonl"), 0, 9), TERN_OK);
    char *got = slurp("rollouts.jsonl");
    cr_expect_str_eq(got, "{\"stage\":\"rl\",\"step\":1}\n"
                          "{\"stage\":\"rl\",\"step\":3}\n"
                          "{\"stage\":\"rl\",\"step\":4}\n");
    free(got);
    /* and the cut to the checkpoint's step still applies */
    cr_assert_eq(tern_jsonl_truncate(at("rollouts.jsonl"), 0, 3), TERN_OK);
    got = slurp("rollouts.jsonl");
    cr_expect_str_eq(got, "{\"stage\":\"rl\",\"step\":1}\n{\"stage\":\"rl\",\"step\":3}\n");
    free(got);
    cr_expect(!exists("rollouts.jsonl.tmp"));
}

/* A write that fails part-way (RLIMIT_FSIZE: EFBIG, as a full disk gives
 * ENOSPC) leaves the file as it was: whole lines. */
Test(jsonl, a_failed_append_leaves_whole_lines, .init = work_setup, .fini = work_teardown)
{
    FILE *f = fopen(at("metrics.jsonl"), "a");
    cr_assert_not_null(f);
    json_t *small = json_pack("{s:s, s:i}", "stage", "rl", "step", 1);
    cr_assert_eq(tern_jsonl_append(f, small, "metrics.jsonl"), TERN_OK, "%s",
                 tern_error_message());
    char pad[141];
    memset(pad, 'x', sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    json_t *big = json_pack("{s:s, s:i, s:s}", "stage", "rl", "step", 2, "pad", pad);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 100; /* the big line stops part-way */
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int rc = tern_jsonl_append(f, big, "metrics.jsonl");
    setrlimit(RLIMIT_FSIZE, &old);
    cr_expect_eq(rc, TERN_EIO);
    cr_expect(strstr(tern_error_message(), "cannot write metrics.jsonl"), "%s",
              tern_error_message());
    cr_expect(strstr(tern_error_message(), strerror(EFBIG)), "%s", tern_error_message());
    /* the next line starts a line of its own */
    cr_assert_eq(tern_jsonl_append(f, small, "metrics.jsonl"), TERN_OK);
    fclose(f);
    char *got = slurp("metrics.jsonl");
    cr_expect_str_eq(got, "{\"stage\":\"rl\",\"step\":1}\n{\"stage\":\"rl\",\"step\":1}\n");
    free(got);
    json_decref(small);
    json_decref(big);
}

/* ---- leftovers ------------------------------------------------------------ */

Test(leftovers, a_killed_runs_partial_files_are_removed, .init = work_setup,
     .fini = work_teardown)
{
    put_text("summary.json.tmp", "");
    put_text("metrics.jsonl.tmp", "{\"stage\"");
    put_text("metrics.jsonl", "{}\n");
    make_dir("checkpoints");
    make_dir("checkpoints/step-4.tmp");
    make_dir("checkpoints/step-4.tmp/policy");
    put_text("checkpoints/step-4.tmp/policy/model.safetensors", "part");
    make_dir("checkpoints/reference.tmp");
    make_dir("checkpoints/step-2"); /* complete: stays */
    make_dir("checkpoints/step-3"); /* replaced: the .old copy goes */
    make_dir("checkpoints/step-3.old");
    make_dir("checkpoints/step-5.old"); /* caught between the two renames */
    put_text("checkpoints/step-5.old/state.json", "{}");
    tern_run_remove_leftovers(work);
    cr_expect(!exists("summary.json.tmp"));
    cr_expect(!exists("metrics.jsonl.tmp"));
    cr_expect(exists("metrics.jsonl"));
    cr_expect(!exists("checkpoints/step-4.tmp"));
    cr_expect(!exists("checkpoints/reference.tmp"));
    cr_expect(exists("checkpoints/step-2"));
    cr_expect(exists("checkpoints/step-3"));
    cr_expect(!exists("checkpoints/step-3.old"));
    cr_expect(exists("checkpoints/step-5/state.json"), "gets its name back");
    cr_expect(!exists("checkpoints/step-5.old"));
}

/* ---- SHA-256 -------------------------------------------------------------- */

/* The digest of n bytes of text, given whole (piece 0) and in pieces that
 * leave partial blocks, fill them exactly and span them. */
static void expect_sha(const char *text, size_t n, const char *want)
{
    static const size_t pieces[] = {0, 1, 7, 63, 64, 65, 130};
    for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
        size_t piece = pieces[p];
        tern_sha256 s;
        tern_sha256_init(&s);
        if (piece == 0) {
            tern_sha256_update(&s, text, n);
        } else {
            for (size_t at = 0; at < n; at += piece)
                tern_sha256_update(&s, text + at, n - at < piece ? n - at : piece);
        }
        char hex[65];
        tern_sha256_hex(&s, hex);
        cr_expect_str_eq(hex, want, "sha256 of %zu bytes in pieces of %zu", n, piece);
    }
}

Test(sha256, known_digests)
{
    expect_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    expect_sha(two, strlen(two),
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    char *m = malloc(1000000);
    cr_assert_not_null(m);
    memset(m, 'a', 1000000);
    expect_sha(m, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(m);
}
