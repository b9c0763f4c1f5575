/* test_new_plugin.c: `tern new-plugin KIND NAME [DIR]` end to end: for each
 * kind (model, reward, buffer, sync, environment, tool) the generated
 * project's plugin builds warning-free against the SDK alone, exports one
 * function, passes `tern check` through the real loader, and every op does
 * what its header says; bad kinds, names and directories are refused without
 * touching anything, and a failed write leaves nothing. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "command.h"
#include "base/errmsg.h"
#include "harness.h"
#include "tern/buffer.h"
#include "tern/environment.h"
#include "tern/model.h"
#include "tern/reward.h"
#include "tern/sync.h"
#include "tern/tool.h"

#define TERN TERN_TEST_BIN
#define SRC TERN_TEST_SOURCE_DIR
#define WORK TERN_TEST_WORK_DIR
#define LOG256 5.5451774444795623f /* log(256) */
#define LOG4 1.3862943611198906f   /* log(4) */

/* In the sanitizer build (GCC) the generated plugin is instrumented too. */
#if defined(__SANITIZE_ADDRESS__) && !defined(__clang__)
#define PLUGIN_SAN " -fsanitize=address,undefined -fno-sanitize-recover=all"
#else
#define PLUGIN_SAN ""
#endif


static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Generate a KIND project as WORK/np_KIND/demo_KIND (the default DIR, run from
 * WORK/np_KIND), check its files, build its plugin as the plugin guide says
 * and run `tern check` on its test.cfg. Leaves the built .so for op tests. */
static void generate_and_check(const char *kind)
{
    result r;
    run(&r, "rm -rf np_%s && mkdir np_%s && cd np_%s && %s new-plugin %s demo_%s", kind, kind,
        kind, TERN, kind, kind);
    cr_assert_eq(r.code, 0, "exit %d: %s", r.code, r.err);
    char want[256];
    snprintf(want, sizeof want, "created the %s plugin 'demo_%s' in demo_%s/", kind, kind, kind);
    cr_expect(strstr(r.out, want), "%s", r.out);
    cr_expect(strstr(r.out, "cmake -S . -B build && cmake --build build && ctest --test-dir build"),
              "prints the next commands: %s", r.out);

    const char *files[] = {"CMakeLists.txt", "test.cfg", "README.md", NULL};
    char path[1024], text[65536];
    for (int i = 0; files[i]; i++) {
        snprintf(path, sizeof path, "%s/np_%s/demo_%s/%s", WORK, kind, kind, files[i]);
        cr_expect(exists(path), "%s", path);
        slurp(path, text, sizeof text);
        cr_expect_null(strstr(text, "@NAME@"), "%s: placeholders replaced", path);
        cr_expect_null(strstr(text, "@KIND@"), "%s: placeholders replaced", path);
    }
    snprintf(path, sizeof path, "%s/np_%s/demo_%s/CMakeLists.txt", WORK, kind, kind);
    slurp(path, text, sizeof text);
    snprintf(want, sizeof want, "tern_add_plugin(demo_%s SOURCES demo_%s.c", kind, kind);
    cr_expect(strstr(text, want), "%s", text);
    cr_expect(strstr(text, "find_package(Tern 1 REQUIRED)"), "%s", text);
    snprintf(want, sizeof want, "add_test(NAME demo_%s_check COMMAND ${TERN_EXECUTABLE} check "
             "--plugins-only", kind);
    cr_expect(strstr(text, want), "%s", text);
    snprintf(path, sizeof path, "%s/np_%s/demo_%s/demo_%s.c", WORK, kind, kind, kind);
    slurp(path, text, sizeof text);
    snprintf(want, sizeof want, ".name = \"demo_%s\"", kind);
    cr_expect(strstr(text, want), "%s", path);
    cr_expect_null(strstr(text, "@NAME@"), "%s", path);
    cr_expect_null(strstr(text, "TERN_EUNSUPPORTED"), "%s: no op is a stub", path);

    /* Warning-free against the SDK headers alone; exactly one exported function. */
    run(&r,
        "cd np_%s/demo_%s && cc -std=c17 -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror "
        "-fPIC -fvisibility=hidden -shared -I%s/core/include" PLUGIN_SAN " -o demo_%s.so "
        "demo_%s.c -lm -pthread && nm -D --defined-only demo_%s.so | grep ' T '",
        kind, kind, SRC, kind, kind, kind);
    cr_assert_eq(r.code, 0, "exit %d: %s%s", r.code, r.out, r.err);
    size_t lines = 0;
    for (const char *p = r.out; (p = strchr(p, '\n')) != NULL; p++)
        lines++;
    cr_expect_eq(lines, 1, "exports exactly one function: %s", r.out);
    cr_expect(strstr(r.out, " T tern_plugin_entry\n"), "%s", r.out);

    /* The real loader: found on TERN_PLUGIN_PATH, settings checked, create/destroy run. */
    run(&r, "cd np_%s/demo_%s && TERN_PLUGIN_PATH=$PWD %s check --plugins-only test.cfg", kind,
        kind, TERN);
    cr_expect_eq(r.code, 0, "exit %d: %s%s", r.code, r.out, r.err);
    snprintf(want, sizeof want, "demo_%s 0.1.0", kind);
    cr_expect(strstr(r.out, want), "%s", r.out);
    cr_expect(strstr(r.out, "ok: test.cfg: its plugins are valid"), "%s", r.out);
}

/* Start the generated plugin in this process (its directory on TERN_PLUGIN_PATH). */
static void open_generated(harness *h, const char *kind, uint32_t k, const char *group)
{
    char dir[1024], name[64];
    snprintf(dir, sizeof dir, "%s/np_%s/demo_%s", WORK, kind, kind);
    snprintf(name, sizeof name, "demo_%s", kind);
    setenv("TERN_PLUGIN_PATH", dir, 1);
    int rc = harness_open(h, name, k, group);
    cr_assert_eq(rc, TERN_OK, "%s", h->error);
}

static void cleanup(const char *kind)
{
    result r;
    run(&r, "rm -rf np_%s", kind);
}

Test(new_plugin, help)
{
    result r;
    run(&r, "%s help new-plugin", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "usage: tern new-plugin KIND NAME [DIR]"), "%s", r.out);
    cr_expect(strstr(r.out, "KIND is model, reward, buffer, sync, environment or tool"), "%s",
              r.out);
    run(&r, "%s new-plugin --help", TERN);
    cr_expect_eq(r.code, 0);
    cr_expect(strstr(r.out, "usage: tern new-plugin KIND NAME [DIR]"), "%s", r.out);
    run(&r, "%s --help", TERN);
    cr_expect(strstr(r.out, "tern new-plugin KIND NAME [DIR]"), "listed: %s", r.out);
}

Test(new_plugin, reward)
{
    generate_and_check("reward");
    harness h;
    open_generated(&h, "reward", TERN_KIND_REWARD, "");
    const tern_reward_ops *ops = harness_ops(&h);
    const char *texts[] = {"  \n\t", "", " 42 ", NULL};
    tern_reward_item items[4];
    tern_reward_result res[4];
    memset(res, 0, sizeof res);
    for (int i = 0; i < 4; i++) {
        items[i] = (tern_reward_item){.size = sizeof items[i], .task = NULL,
                                      .response = texts[i],
                                      .response_len = texts[i] ? strlen(texts[i]) : 0};
        res[i].size = sizeof res[i];
    }
    cr_assert_eq(ops->score(h.state, items, res, 4), TERN_OK);
    double want[] = {0, 0, 1, 0};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(res[i].reward, want[i], "item %d", i);
        cr_expect_eq(res[i].n_components, 1);
        cr_expect_str_eq(res[i].components[0].name, "non_empty");
        cr_expect_eq(res[i].components[0].value, want[i]);
        cr_expect_neq(res[i].reason[0], '\0', "item %d has a reason", i);
    }
    cr_expect(strstr(res[2].reason, "2 bytes"), "%s", res[2].reason);
    harness_close(&h);
    cleanup("reward");
}

Test(new_plugin, sync)
{
    generate_and_check("sync");
    harness h;
    open_generated(&h, "sync", TERN_KIND_SYNC, "interval = 3;");
    const tern_sync_ops *ops = harness_ops(&h);
    tern_sync_info info = {.size = sizeof info};
    cr_assert_eq(ops->describe(h.state, &info), TERN_OK);
    cr_expect_str_eq(info.transport, "memory");
    cr_expect_eq(info.explorers, 1);
    cr_expect_eq(info.max_staleness, -1);
    tern_sync_plan plan = {.size = sizeof plan};
    cr_assert_eq(ops->explorer_plan(h.state, 0, 7, &plan), TERN_OK);
    cr_expect_eq(plan.mode, TERN_SYNC_USE_NEWEST);
    cr_expect_lt(ops->explorer_plan(h.state, 0, -1, &plan), 0);
    int publishes[] = {0, 0, 1, 0, 0, 1};
    for (int t = 0; t < 6; t++)
        cr_expect_eq(ops->trainer_publishes(h.state, t), publishes[t], "step %d", t);
    cr_expect_lt(ops->trainer_publishes(h.state, -1), 0);
    cr_expect_eq(ops->accept(h.state, 0, 1000), 1);
    harness_close(&h);

    /* the default interval is 1, and the spec's range is enforced */
    open_generated(&h, "sync", TERN_KIND_SYNC, "");
    ops = harness_ops(&h);
    cr_expect_eq(ops->trainer_publishes(h.state, 0), 1);
    harness_close(&h);
    result r;
    run(&r, "cd np_sync/demo_sync && TERN_PLUGIN_PATH=$PWD %s check --plugins-only test.cfg "
            "-o sync.interval=0", TERN);
    cr_expect_eq(r.code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "sync.interval: 0 is out of range"), "%s", r.err);
    cleanup("sync");
}

typedef struct blocked_get {
    const tern_buffer_ops *ops;
    void *state;
    int rc;
    size_t got;
} blocked_get;

static void *get_until_closed(void *arg)
{
    blocked_get *g = arg;
    tern_record rec = {.size = sizeof rec};
    g->rc = g->ops->get(g->state, &rec, 1, &g->got, -1);
    return NULL;
}

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

Test(new_plugin, buffer)
{
    generate_and_check("buffer");
    harness h;
    open_generated(&h, "buffer", TERN_KIND_BUFFER, "");
    const tern_buffer_ops *ops = harness_ops(&h);
    const char *payload[] = {"first", "second", "third"};
    for (int i = 0; i < 3; i++) {
        tern_record_meta m = {.size = sizeof m, .id = (uint64_t)i + 1, .version = 0, .batch = i};
        cr_assert_eq(ops->put(h.state, payload[i], strlen(payload[i]), &m, 0), TERN_OK);
    }
    tern_record recs[4];
    for (int i = 0; i < 4; i++)
        recs[i] = (tern_record){.size = sizeof recs[i]};
    size_t got = 99;
    cr_assert_eq(ops->get(h.state, recs, 2, &got, 0), TERN_OK);
    cr_assert_eq(got, 2);
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(recs[i].meta.id, (uint64_t)i + 1, "first in, first out");
        cr_expect_eq(recs[i].len, strlen(payload[i]));
        cr_expect_eq(memcmp(recs[i].data, payload[i], recs[i].len), 0);
    }
    tern_buffer_stats st = {.size = sizeof st};
    cr_assert_eq(ops->stats(h.state, &st), TERN_OK);
    cr_expect_eq(st.held, 1);
    cr_expect_eq(st.capacity, 0, "unbounded");
    cr_expect_eq(st.put, 3);
    cr_expect_eq(st.got, 2);
    ops->release(h.state, recs, 2);
    cr_expect_null(recs[0].data, "release clears the records");

    /* the third record, then timeouts on an empty buffer */
    cr_assert_eq(ops->get(h.state, recs, 4, &got, 0), TERN_OK);
    cr_expect_eq(got, 1);
    cr_expect_eq(recs[0].meta.id, 3);
    cr_expect_eq(ops->get(h.state, recs + 1, 1, &got, 0), TERN_ETIMEDOUT);
    cr_expect_eq(got, 0);
    uint64_t t0 = now_ms();
    cr_expect_eq(ops->get(h.state, recs + 1, 1, &got, 50), TERN_ETIMEDOUT);
    cr_expect_geq(now_ms() - t0, 45, "waits about its timeout");
    /* recs[0] is never released: destroy frees it */

    /* close wakes a blocked getter; puts are refused; what is held drains first */
    blocked_get g = {.ops = ops, .state = h.state, .rc = 1};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, get_until_closed, &g), 0);
    usleep(20000);
    ops->close(h.state);
    pthread_join(th, NULL);
    cr_expect_eq(g.rc, TERN_ECLOSED);
    cr_expect_eq(g.got, 0);
    tern_record_meta m = {.size = sizeof m, .id = 9};
    cr_expect_eq(ops->put(h.state, "x", 1, &m, -1), TERN_ECLOSED);
    cr_expect_eq(ops->get(h.state, recs + 1, 1, &got, -1), TERN_ECLOSED);
    harness_close(&h);

    open_generated(&h, "buffer", TERN_KIND_BUFFER, "");
    ops = harness_ops(&h);
    cr_assert_eq(ops->put(h.state, "y", 1, &m, 0), TERN_OK);
    ops->close(h.state);
    cr_expect_eq(ops->get(h.state, recs, 1, &got, -1), TERN_OK, "drains after close");
    cr_expect_eq(got, 1);
    ops->release(h.state, recs, 1);
    cr_expect_eq(ops->get(h.state, recs, 1, &got, -1), TERN_ECLOSED);
    harness_close(&h);
    cleanup("buffer");
}

Test(new_plugin, model)
{
    generate_and_check("model");
    harness h;
    open_generated(&h, "model", TERN_KIND_MODEL, "");
    const tern_model_ops *ops = harness_ops(&h);
    void *s = h.state;

    int32_t *ids = NULL;
    size_t n = 0;
    cr_assert_eq(ops->tokenize(s, "hi", 2, 1, &ids, &n), TERN_OK);
    cr_assert_eq(n, 3);
    cr_expect_eq(ids[0], 256, "BOS");
    cr_expect_eq(ids[1], 'h');
    cr_expect_eq(ids[2], 'i');
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(ops->detokenize(s, ids, n, &text, &len), TERN_OK);
    cr_expect_eq(len, 2);
    cr_expect_str_eq(text, "hi");
    ops->free_buffer(s, text);
    int32_t bad = 300;
    cr_expect_eq(ops->detokenize(s, &bad, 1, &text, &len), TERN_EINVAL);

    /* request 0: two samples of 5 uniform tokens; request 1: greedy, stops at once */
    int32_t stop = 0;
    tern_gen_request req[3] = {
        {.size = sizeof req[0], .prompt = ids, .prompt_len = n, .n_samples = 2,
         .max_new_tokens = 5, .temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = 7},
        {.size = sizeof req[1], .prompt = ids, .prompt_len = n, .n_samples = 1,
         .max_new_tokens = 4, .temperature = 0.0f, .top_k = 0, .top_p = 1.0f, .stop = &stop,
         .n_stop = 1, .seed = 7},
        {.size = sizeof req[2], .prompt = ids, .prompt_len = n, .n_samples = 1,
         .max_new_tokens = 64, .temperature = 1.0f, .top_k = 4, .top_p = 1.0f, .seed = 3},
    };
    tern_gen_output outs[4], again[4];
    for (int i = 0; i < 4; i++)
        outs[i] = again[i] = (tern_gen_output){.size = sizeof outs[i]};
    cr_assert_eq(ops->generate(s, req, 3, outs), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(ops->generate(s, req, 3, again), TERN_OK);
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(outs[i].len, 5);
        cr_expect_eq(outs[i].finish, 2, "max_new_tokens");
        for (size_t t = 0; t < outs[i].len; t++) {
            cr_expect(outs[i].tokens[t] >= 0 && outs[i].tokens[t] < 256);
            cr_expect_float_eq(outs[i].logprobs[t], -LOG256, 1e-5);
        }
        cr_expect_eq(memcmp(outs[i].tokens, again[i].tokens, 5 * sizeof(int32_t)), 0,
                     "same seed, same output");
    }
    cr_expect_neq(memcmp(outs[0].tokens, outs[1].tokens, 5 * sizeof(int32_t)), 0,
                  "two samples differ");
    cr_expect_eq(outs[2].len, 1);
    cr_expect_eq(outs[2].tokens[0], 0, "greedy takes the lowest id");
    cr_expect_eq(outs[2].finish, 1, "stop token");
    cr_expect_float_eq(outs[2].logprobs[0], 0.0f, 1e-6);
    cr_expect_eq(outs[3].len, 64);
    for (size_t t = 0; t < outs[3].len; t++) {
        cr_expect_lt(outs[3].tokens[t], 4, "top_k keeps 4");
        cr_expect_float_eq(outs[3].logprobs[t], -LOG4, 1e-5);
    }
    for (int i = 0; i < 4; i++) {
        ops->free_buffer(s, outs[i].tokens);
        ops->free_buffer(s, outs[i].logprobs);
        ops->free_buffer(s, again[i].tokens);
        ops->free_buffer(s, again[i].logprobs);
    }
    req[0].n_samples = 0;
    cr_expect_eq(ops->generate(s, req, 1, outs), TERN_EINVAL);

    /* score, backward, step, tensors */
    tern_sequence seq = {.size = sizeof seq, .tokens = ids, .len = n, .start = 1};
    float lp[3], ent[3];
    float *lps[1] = {lp}, *ents[1] = {ent};
    cr_assert_eq(ops->score(s, &seq, 1, lps, ents), TERN_OK);
    cr_expect_eq(lp[0], 0.0f, "entry 0 unused");
    cr_expect_float_eq(lp[1], -LOG256, 1e-5);
    cr_expect_float_eq(lp[2], -LOG256, 1e-5);
    cr_expect_float_eq(ent[2], LOG256, 1e-5);
    cr_expect_eq(ops->score(s, &seq, 1, lps, NULL), TERN_OK, "entropies may be NULL");
    const float *dl[1] = {lp};
    cr_expect_eq(ops->backward(s, &seq, 1, dl, NULL), TERN_OK);
    tern_optim_step step = {.size = sizeof step, .lr = 1e-3, .grad_norm = 5};
    cr_expect_eq(ops->step(s, &step), TERN_OK);
    cr_expect_eq(step.grad_norm, 0.0);
    const tern_tensor *tensors = NULL;
    size_t nt = 9;
    cr_expect_eq(ops->tensors(s, &tensors, &nt), TERN_OK);
    cr_expect_eq(nt, 0);
    ops->free_buffer(s, ids);

    /* save writes config.json; load checks it */
    char dir[1024], path[1100], json[256];
    snprintf(dir, sizeof dir, "%s/np_model/ckpt", WORK);
    cr_assert_eq(ops->save(s, dir, 1), TERN_OK, "%s", tern_error_message());
    snprintf(path, sizeof path, "%s/config.json", dir);
    slurp(path, json, sizeof json);
    cr_expect(strstr(json, "{\"model_type\":\"uniform_bytes\"}"), "%s", json);
    cr_expect_eq(ops->load(s, dir, 1), TERN_OK);
    snprintf(dir, sizeof dir, "%s/np_model/nothing_here", WORK);
    cr_expect_eq(ops->load(s, dir, 0), TERN_ENOTFOUND);
    cr_expect(strstr(tern_error_message(), "nothing_here/config.json: cannot read"), "%s",
              tern_error_message());
    harness_close(&h);
    cleanup("model");
}

Test(new_plugin, environment)
{
    generate_and_check("environment");
    harness h;
    open_generated(&h, "environment", TERN_KIND_ENVIRONMENT, "keyword = \"done\";");
    const tern_environment_ops *ops = harness_ops(&h);
    cr_expect(h.entry->plugin->desc->caps & TERN_CAP_THREAD_SAFE);
    /* two episodes in flight at once, each with its own turns */
    void *ep[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        tern_env_result r = {.size = sizeof r};
        cr_assert_eq(ops->reset(h.state, NULL, (uint64_t)i, &ep[i], &r), TERN_OK);
        cr_assert_not_null(ep[i]);
        cr_expect_eq(r.failure, TERN_ENV_OK);
        cr_expect_str_eq(r.observation, "Say anything; I will echo it. Say \"done\" when you "
                         "are done.");
    }
    const char *turns[] = {"hello", "hi", "still here", "I am done now"};
    tern_env_result r;
    for (int t = 0; t < 4; t++) {
        tern_env_action a = {.size = sizeof a, .text = turns[t], .text_len = strlen(turns[t]),
                             .turn = (uint32_t)t / 2 + 1};
        r = (tern_env_result){.size = sizeof r};
        cr_assert_eq(ops->step(h.state, ep[t % 2], &a, &r), TERN_OK);
        cr_expect_eq(r.failure, TERN_ENV_OK, "%s", r.reason);
        if (t < 3) {
            char want[64];
            snprintf(want, sizeof want, "You said: %s", turns[t]);
            cr_expect_str_eq(r.observation, want);
            cr_expect_eq(r.reward, 0.0);
            cr_expect_not(r.done);
        }
    }
    cr_expect(r.done, "the keyword ends the episode");
    cr_expect_eq(r.reward, 1.0);
    cr_expect_null(r.observation);
    cr_expect(strstr(r.reason, "said \"done\" at turn 2"), "%s", r.reason);
    tern_env_action again = {.size = sizeof again, .text = "x", .text_len = 1, .turn = 3};
    r = (tern_env_result){.size = sizeof r};
    cr_assert_eq(ops->step(h.state, ep[1], &again, &r), TERN_OK);
    cr_expect_eq(r.failure, TERN_ENV_AFTER_DONE, "%s", r.reason);
    for (int i = 0; i < 2; i++)
        ops->close(h.state, ep[i]);
    harness_close(&h);
    /* an empty keyword is a config error, said at create */
    harness bad;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/np_environment/demo_environment", WORK);
    setenv("TERN_PLUGIN_PATH", dir, 1);
    cr_expect_eq(harness_open(&bad, "demo_environment", TERN_KIND_ENVIRONMENT, "keyword = \"\";"),
                 TERN_ECONFIG);
    cr_expect(strstr(bad.error, "keyword"), "%s", bad.error);
    harness_close(&bad);
    cleanup("environment");
}

/* One call of the generated tool with `args`, into a buffer of `cap` bytes
 * (at most 512). */
static tern_tool_result tool_call_with(const harness *h, const char *args, char *buf, size_t cap)
{
    const tern_tool_ops *ops = harness_ops(h);
    tern_tool_result out = {.size = sizeof out, .output = buf, .output_cap = cap};
    tern_tool_call c = {.size = sizeof c, .name = "demo_tool", .arguments = args, .seed = 1};
    memset(buf, 'x', cap);
    cr_assert_eq(ops->call(h->state, &c, &out), TERN_OK, "%s", args);
    cr_expect_eq(out.output_len, strlen(buf), "%s: output_len", args);
    cr_expect_lt(out.output_len, cap, "%s", args);
    return out;
}

Test(new_plugin, tool)
{
    generate_and_check("tool");
    harness h;
    open_generated(&h, "tool", TERN_KIND_TOOL, "");
    const tern_tool_ops *ops = harness_ops(&h);
    cr_expect(h.entry->plugin->desc->caps & TERN_CAP_THREAD_SAFE);
    const char *schema = NULL;
    cr_assert_eq(ops->describe(h.state, &schema), TERN_OK);
    cr_assert_not_null(schema);
    json_t *js = json_loads(schema, 0, NULL);
    cr_assert_not_null(js, "the schema is JSON: %s", schema);
    cr_expect_str_eq(json_string_value(json_object_get(js, "type")), "function");
    json_t *fn = json_object_get(js, "function");
    cr_expect_str_eq(json_string_value(json_object_get(fn, "name")), "demo_tool",
                     "the default name is the plugin's: %s", schema);
    cr_expect(json_is_string(json_object_get(fn, "description")), "%s", schema);
    json_t *params = json_object_get(fn, "parameters");
    cr_expect_str_eq(json_string_value(json_object_get(params, "type")), "object");
    cr_expect(json_is_object(json_object_get(json_object_get(params, "properties"), "text")),
              "%s", schema);
    json_decref(js);

    char buf[512];
    tern_tool_result r = tool_call_with(&h, "{\"text\": \"hello world\"}", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_OK);
    cr_expect_str_eq(buf, "characters: 11, words: 2, lines: 1");
    cr_expect_not(r.truncated);
    /* compact, with escapes as the core writes them (JSON_ENSURE_ASCII): the
     * text is "caf<U+00E9> \"au lait\"<LF><TAB>fin\ <U+1F600>": 22 characters */
    r = tool_call_with(&h, "{\"text\":\"caf\\u00e9 \\\"au lait\\\"\\n\\tfin\\\\ "
                           "\\ud83d\\ude00\"}", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_OK, "%s", buf);
    cr_expect_str_eq(buf, "characters: 22, words: 5, lines: 2");
    r = tool_call_with(&h, " { \"text\" : \"a\\nb\\n\" } ", buf, sizeof buf);
    cr_expect_str_eq(buf, "characters: 4, words: 2, lines: 2", "a last newline ends a line");
    r = tool_call_with(&h, "{\"text\": \"\"}", buf, sizeof buf);
    cr_expect_str_eq(buf, "characters: 0, words: 0, lines: 0");

    /* arguments it does not take: invalid, and the output says why */
    const struct {
        const char *args, *why;
    } bad[] = {
        {"{}", "the arguments need \"text\""},
        {"[\"hi\"]", "the arguments must be a JSON object"},
        {"", "the arguments must be a JSON object"},
        {"{\"text\": 3}", "\"text\" must be a string such as \"hello world\", not a number"},
        {"{\"text\": \"a\", \"lang\": \"en\"}", "unknown argument \"lang\""},
        {"{\"text\": \"a\", \"text\": \"b\"}", "\"text\" is given twice"},
        {"{\"text\": \"a\",}", "not valid JSON"},
        {"{\"text\": \"a\"} {}", "something follows"},
        {"{\"text\": \"abc", "a string is not closed"},
        {"{\"text\": \"a\\qb\"}", "unknown escape"},
        {"{\"text\": \"\\u12g4\"}", "4 hex digits"},
        {"{\"text\": \"\\ud83d\"}", "surrogate pair alone"},
        {"{\"text\": \"a\nb\"}", "control character"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = tool_call_with(&h, bad[i].args, buf, sizeof buf);
        cr_expect_eq(r.status, TERN_TOOL_INVALID, "%s: %s", bad[i].args, buf);
        cr_expect(strstr(buf, bad[i].why), "%s: %s", bad[i].args, buf);
        cr_expect_null(strchr(buf, '\n'), "one line: %s", buf);
    }

    /* an output longer than the core's buffer is cut, and says so */
    r = tool_call_with(&h, "{\"text\": \"hello world\"}", buf, 8);
    cr_expect_eq(r.status, TERN_TOOL_OK);
    cr_expect_str_eq(buf, "charact");
    cr_expect_eq(r.output_len, 7);
    cr_expect(r.truncated);
    r = tool_call_with(&h, "{\"text\": \"hello world\"}", buf, 1);
    cr_expect_str_eq(buf, "");
    cr_expect(r.truncated);
    harness_close(&h);

    /* the setting renames the function; a name the core would refuse is a
     * config error, said at create */
    open_generated(&h, "tool", TERN_KIND_TOOL, "name = \"count-text\";");
    ops = harness_ops(&h);
    cr_assert_eq(ops->describe(h.state, &schema), TERN_OK);
    cr_expect(strstr(schema, "\"name\": \"count-text\""), "%s", schema);
    harness_close(&h);
    harness bad_name;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/np_tool/demo_tool", WORK);
    setenv("TERN_PLUGIN_PATH", dir, 1);
    cr_expect_eq(harness_open(&bad_name, "demo_tool", TERN_KIND_TOOL, "name = \"count text\";"),
                 TERN_ECONFIG);
    cr_expect(strstr(bad_name.error, "name"), "%s", bad_name.error);
    cr_expect(strstr(bad_name.error, "\"count text\" is not a function name"), "%s",
              bad_name.error);
    harness_close(&bad_name);
    result res;
    run(&res, "cd np_tool/demo_tool && TERN_PLUGIN_PATH=$PWD %s check --plugins-only test.cfg "
              "-o 'tools.0.name=\"\"'", TERN);
    cr_expect_eq(res.code, 2, "%s%s", res.out, res.err);
    cr_expect(strstr(res.err, "is not a function name"), "%s", res.err);
    cleanup("tool");
}

Test(new_plugin, refuses_unknown_kind_and_bad_names)
{
    result r;
    run(&r, "%s new-plugin widget np_w", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "unknown kind 'widget'; KIND is one of: model, reward, buffer, sync, "
                             "environment, tool\n"),
              "%s", r.err);
    cr_expect(!exists(WORK "/np_w"), "nothing created");

    const char *bad[] = {"Demo", "1demo", "_demo", "de-mo", "de.mo", "",
                         "a23456789012345678901234567890123456789012345678901234567890123456"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run(&r, "%s new-plugin sync '%s' np_bad", TERN, bad[i]);
        cr_expect_eq(r.code, 2, "'%s'", bad[i]);
        cr_expect(strstr(r.err, "is not a valid plugin name"), "'%s': %s", bad[i], r.err);
        cr_expect(!exists(WORK "/np_bad"), "nothing created for '%s'", bad[i]);
    }
    run(&r, "%s new-plugin sync test np_bad", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "'test' is a target name CMake reserves"), "%s", r.err);
    /* 64 characters is fine */
    run(&r, "%s new-plugin sync "
            "a234567890123456789012345678901234567890123456789012345678901234 np_long && "
            "test -f np_long/a234567890123456789012345678901234567890123456789012345678901234.c",
        TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    run(&r, "rm -rf np_long");

    /* usage */
    run(&r, "%s new-plugin sync", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "usage: tern new-plugin KIND NAME [DIR]"), "%s", r.err);
    run(&r, "%s new-plugin sync a b c", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "unexpected argument 'c'"), "%s", r.err);
    run(&r, "%s new-plugin --force sync a", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "unknown option '--force'"), "%s", r.err);
}

Test(new_plugin, never_overwrites)
{
    result r;
    run(&r, "rm -rf np_full && mkdir -p np_full && echo keep > np_full/demo.c && "
            "touch -d 2001-01-01 np_full/demo.c");
    struct stat before, after;
    cr_assert_eq(stat(WORK "/np_full/demo.c", &before), 0);
    run(&r, "%s new-plugin reward demo np_full/", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "np_full: exists and is not empty"), "%s", r.err);
    run(&r, "ls -A np_full && cat np_full/demo.c");
    cr_expect_str_eq(r.out, "demo.c\nkeep\n", "nothing added or changed");
    cr_assert_eq(stat(WORK "/np_full/demo.c", &after), 0);
    cr_expect_eq(before.st_mtime, after.st_mtime);

    /* a file as DIR */
    run(&r, "%s new-plugin reward demo np_full/demo.c", TERN);
    cr_expect_eq(r.code, 2);
    cr_expect(strstr(r.err, "np_full/demo.c: exists and is not a directory"), "%s", r.err);

    /* an empty directory is used; parents are created */
    run(&r, "mkdir np_full/empty && %s new-plugin buffer demo np_full/empty && "
            "%s new-plugin buffer demo np_full/a/b/c && LC_ALL=C ls np_full/empty np_full/a/b/c",
        TERN, TERN);
    cr_expect_eq(r.code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "np_full/a/b/c:\nCMakeLists.txt\nREADME.md\ndemo.c\ntest.cfg\n"), "%s",
              r.out);
    run(&r, "rm -rf np_full");
}

Test(new_plugin, failed_write_leaves_nothing)
{
    result r;
    /* a directory that cannot be created */
    run(&r, "%s new-plugin sync demo /proc/tern-np-cannot-exist/x", TERN);
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "/proc/tern-np-cannot-exist: cannot create directory"), "%s", r.err);

    /* a file that cannot be written (a 2 KiB file size limit; the plugin
     * source is larger): everything this call created is removed again */
    run(&r, "rm -rf np_fail && (trap '' XFSZ; ulimit -f 4; exec %s new-plugin model demo "
            "np_fail/sub)",
        TERN);
    cr_expect_eq(r.code, 1, "%s", r.err);
    cr_expect(strstr(r.err, "np_fail/sub/demo.c: cannot write: File too large"), "%s", r.err);
    cr_expect(!exists(WORK "/np_fail"), "the directories it made are gone");
    cr_expect_eq(r.out[0], '\0', "%s", r.out);
}
