/* test_wire.c: the role messages as bytes (core/src/channel/wire.c): every
 * kind of message reads back field for field (doubles and floats bit for
 * bit, NULL apart from "", the weights snapshot and the JSON figures too,
 * the tasks' images and their digests),
 * and the decoder refuses, without crashing, leaking or allocating what a
 * forged count asks for, every truncation, bad header, trailing byte, bad
 * string, unknown role and any byte flipped that makes a message wrong. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/errmsg.h"
#include "channel/messages.h"
#include "channel/wire.h"

/* The bytes the heap holds, under AddressSanitizer, to see that a decode
 * frees all it allocated: LeakSanitizer cannot tell, since tests/lsan.supp
 * suppresses every leak whose stack has a libcriterion.so frame (every leak
 * of a test). Without AddressSanitizer nothing is counted (glibc's
 * mallinfo2 counts the chunks its thread cache holds as in use). */
#if defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void); /* <sanitizer/allocator_interface.h> */
static size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
#else
static size_t heap_in_use(void) { return 0; }
#endif

#define expect_no_leak(before, what)                                                      \
    do {                                                                                  \
        size_t now_ = heap_in_use();                                                      \
        cr_expect_eq(now_, (before), "%s: the heap holds %zu bytes, %zu before", (what),  \
                     now_, (size_t)(before));                                             \
    } while (0)

/* ---- building messages ---------------------------------------------------------- */

static char *dup_or_null(const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    cr_assert_not_null(d);
    return d;
}

static void *zalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    cr_assert_not_null(p);
    return p;
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }
static int same_bits_f(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

static double bits_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static tern_explore_job *make_explore(uint32_t n)
{
    static const char *prompts[] = {"What is 2 + 2?", "", "\xc3\xbcnicode\n\ttabs \"quoted\""};
    static const char *systems[] = {NULL, "", "Answer briefly."};
    tern_explore_job *j = zalloc(1, sizeof *j);
    j->kind = TERN_MSG_EXPLORE;
    j->batch = -3;
    j->min_version = 5;
    j->plan_batch = -2;
    j->n = n;
    j->task_index = zalloc(n, sizeof *j->task_index);
    j->prompt = zalloc(n, sizeof *j->prompt);
    j->system = zalloc(n, sizeof *j->system);
    j->image = zalloc(n, sizeof *j->image);
    for (uint32_t i = 0; i < n; i++) {
        j->task_index[i] = i == 2 ? UINT32_MAX : 7 * i;
        j->prompt[i] = dup_or_null(prompts[i % 3]);
        j->system[i] = dup_or_null(systems[i % 3]);
        j->image[i] = dup_or_null(i % 3 == 1 ? "data/shapes/images/shape-00001.png" : NULL);
    }
    return j;
}

static tern_sft_job *make_sft(uint32_t n)
{
    tern_sft_job *j = zalloc(1, sizeof *j);
    j->kind = TERN_MSG_SFT_BATCH;
    j->step = INT64_MAX;
    j->n = n;
    j->prompt = zalloc(n, sizeof *j->prompt);
    j->answer = zalloc(n, sizeof *j->answer);
    j->system = zalloc(n, sizeof *j->system);
    j->image = zalloc(n, sizeof *j->image);
    for (uint32_t i = 0; i < n; i++) {
        j->prompt[i] = dup_or_null(i % 2 ? "" : "Name a prime.");
        j->answer[i] = dup_or_null(i % 2 ? "7" : "");
        j->system[i] = dup_or_null(i % 2 ? NULL : "You are terse.");
        j->image[i] = dup_or_null(i % 2 ? "/abs/img.ppm" : NULL);
    }
    return j;
}

static tern_rollout_msg *make_rollout(uint32_t n, uint32_t G)
{
    tern_rollout_msg *m = zalloc(1, sizeof *m);
    m->kind = TERN_MSG_ROLLOUT;
    m->batch = 12;
    m->version = -1;
    m->explorer = 3;
    m->n = n;
    m->group_size = G;
    m->task_index = zalloc(n, sizeof *m->task_index);
    m->prompt_tokens = zalloc(n, sizeof *m->prompt_tokens);
    m->prompt_len = zalloc(n, sizeof *m->prompt_len);
    m->image = zalloc(n, sizeof *m->image);
    m->image_sha256 = zalloc(n, 32);
    for (uint32_t i = 0; i < n; i++) {
        m->image[i] = dup_or_null(i % 2 ? NULL : "img/a.png");
        for (int b = 0; m->image[i] && b < 32; b++)
            m->image_sha256[32 * i + (uint32_t)b] = (unsigned char)(i * 32 + (uint32_t)b + 1);
        m->task_index[i] = 100 + i;
        m->prompt_len[i] = i % 2 ? 0 : 3;
        m->prompt_tokens[i] = zalloc(m->prompt_len[i], sizeof(int32_t));
        for (uint32_t k = 0; k < m->prompt_len[i]; k++)
            m->prompt_tokens[i][k] = k == 1 ? INT32_MIN : (int32_t)(i * 10 + k);
    }
    size_t total = (size_t)n * G;
    m->resp = zalloc(total, sizeof *m->resp);
    const float specials[] = {-0.0f, -INFINITY, bits_float(0x7fc00123u), -1e-45f, -3.25f};
    for (size_t i = 0; i < total; i++) {
        tern_response *r = &m->resp[i];
        r->len = (uint32_t)(i % 3 == 0 ? 0 : i % 3 == 1 ? 1 : 5);
        r->finish = i % 2 ? TERN_FINISH_LENGTH : TERN_FINISH_STOP;
        r->tokens = zalloc(r->len, sizeof *r->tokens);
        r->logp = zalloc(r->len, sizeof *r->logp);
        for (uint32_t k = 0; k < r->len; k++) {
            r->tokens[k] = (int32_t)(1000 * i + k) - 2;
            r->logp[k] = specials[(i + k) % 5];
        }
        r->text = dup_or_null(i % 3 == 0 ? "" : "The answer is 4.");
        if (r->len == 5) { /* a trajectory: model 2, context 2, model 1 */
            r->n_segments = 3;
            r->seg_len = zalloc(3, sizeof *r->seg_len);
            r->seg_len[0] = 2, r->seg_len[1] = 2, r->seg_len[2] = 1;
            r->n_turns = 2;
            r->turn_reward = zalloc(2, sizeof *r->turn_reward);
            r->turn_reward[0] = -0.0, r->turn_reward[1] = 1e-300;
            r->end = 1 + i % 4;
            r->env_failure = r->end == 4 ? 3 : 0;
            r->env_reason = dup_or_null(i % 2 ? NULL : "solved in 2 guesses");
            if (i % 2) { /* its second call started over */
                r->n_restarts = 1;
                r->restart = zalloc(1, sizeof *r->restart);
                r->restart[0] = 1;
            }
        }
    }
    m->gen_seconds = 0.1;
    m->wait_seconds = 1e-300;
    m->gen_tokens = UINT64_MAX - 5;
    m->done_unix_ns = 1732560000123456789ull;
    m->tool_calls = 7, m->tool_invalid = 2, m->tool_failed = UINT64_MAX - 1;
    return m;
}

/* A train order: a warm-up job, or `n` groups of arbitrary bytes. */
static tern_train_msg *make_train(uint32_t order, uint32_t n)
{
    tern_train_msg *m = zalloc(1, sizeof *m);
    m->kind = TERN_MSG_TRAIN;
    m->order = order;
    m->step = -3 + (int64_t)n;
    if (order == TERN_TRAIN_SFT)
        m->sft = make_sft(2);
    m->n = n;
    m->group = zalloc(n, sizeof *m->group);
    m->group_len = zalloc(n, sizeof *m->group_len);
    for (uint32_t i = 0; i < n; i++) {
        m->group_len[i] = i == 1 ? 0 : 5 + i;
        m->group[i] = zalloc(m->group_len[i] + 1, 1);
        for (size_t k = 0; k < m->group_len[i]; k++)
            m->group[i][k] = (unsigned char)(k * 37 + i);
    }
    return m;
}

static tern_reward_ask *make_reward_ask(uint32_t n)
{
    tern_reward_ask *a = zalloc(1, sizeof *a);
    a->kind = TERN_MSG_REWARD_ASK;
    a->route = 2;
    a->n = n;
    a->task = zalloc(n, sizeof *a->task);
    a->origin = zalloc(n, sizeof *a->origin);
    a->response = zalloc(n, sizeof *a->response);
    a->tokens = zalloc(n, sizeof *a->tokens);
    for (uint32_t i = 0; i < n; i++) {
        a->task[i] = dup_or_null("{\"prompt\": \"1+1\", \"answer\": \"2\"}");
        a->origin[i] = i % 2 ? NULL : dup_or_null("train.jsonl:7");
        a->response[i] = dup_or_null(i == 1 ? "" : "the answer is 2");
        a->tokens[i] = 5 * i;
    }
    return a;
}

static tern_reward_answer *make_reward_answer(uint32_t n)
{
    tern_reward_answer *a = zalloc(1, sizeof *a);
    a->kind = TERN_MSG_REWARD_ANSWER;
    a->n = n;
    a->reply = zalloc(n, sizeof *a->reply);
    for (uint32_t i = 0; i < n; i++) {
        tern_reward_reply *r = &a->reply[i];
        r->failure = i == 2 ? 4 : 0;
        r->reward = i == 0 ? bits_double(0x7ff8000000000123ull) : 0.25 * i;
        r->reason = dup_or_null(i == 2 ? "timed out" : "extracted 2, expected 2");
        r->n_comp = i % 3;
        for (uint32_t c = 0; c < r->n_comp; c++) {
            r->comp_name[c] = dup_or_null(c ? "format" : "accuracy");
            r->comp_value[c] = 1.0 / (c + 3);
        }
    }
    return a;
}

static json_t *make_figures(void)
{
    json_t *o = json_object();
    json_object_set_new(o, "reward_mean", json_real(0.1));
    json_object_set_new(o, "tiny", json_real(1e-300));
    json_object_set_new(o, "big", json_real(-2.5e17));
    json_object_set_new(o, "subnormal", json_real(5e-324));
    json_object_set_new(o, "max", json_real(1.7976931348623157e308));
    json_object_set_new(o, "minus_zero", json_real(-0.0));
    json_object_set_new(o, "third", json_real(1.0 / 3.0));
    json_object_set_new(o, "one", json_real(1.0));
    json_object_set_new(o, "groups", json_integer(42));
    json_object_set_new(o, "neg", json_integer(-9007199254740993LL));
    json_object_set_new(o, "name", json_string("acc/\"math\"\n"));
    json_object_set_new(o, "flag", json_true());
    json_object_set_new(o, "none", json_null());
    return o;
}

static json_t *make_groups(void)
{
    json_t *a = json_array();
    for (int i = 0; i < 2; i++) {
        json_t *g = json_object();
        json_object_set_new(g, "step", json_integer(5));
        json_object_set_new(g, "rewards", json_pack("[f, f, i]", 0.7, -1e-7, i));
        json_array_append_new(a, g);
    }
    return a;
}

static tern_snapshot *make_snapshot(void)
{
    float w[6] = {1.5f, -0.0f, bits_float(0x7f800001u), 3e38f, -1e-45f, 0.1f};
    uint16_t h[8] = {0x3f80, 0xbf80, 0x0000, 0x8000, 0x7f80, 0xffff, 0x1234, 0x4049};
    tern_tensor t[2] = {
        {.size = sizeof(tern_tensor), .name = "model.layers.0.mlp.up_proj.weight",
         .dtype = TERN_DTYPE_F32, .ndim = 2, .shape = {2, 3, 0, 0}, .data = w, .bytes = sizeof w},
        {.size = sizeof(tern_tensor), .name = "model.norm.weight", .dtype = TERN_DTYPE_BF16,
         .ndim = 3, .shape = {2, 2, 2, -7}, .data = h, .bytes = sizeof h},
    };
    tern_snapshot *s = tern_snapshot_take(t, 2, 17);
    cr_assert_not_null(s);
    return s;
}

static tern_step_msg *make_step(tern_msg_kind kind, int full)
{
    tern_step_msg *m = zalloc(1, sizeof *m);
    m->kind = kind;
    m->step = 5;
    m->version = 6;
    m->batch = -1;
    m->rollout_version = INT64_MIN;
    m->sft_step = 9;
    m->published = 1;
    m->in_rl = -1;
    m->rl_fresh = 2;
    m->loss = (tern_loss_stats){.loss = 0.1, .pg_loss = -2.5e17, .kl = 1e-300, .entropy = NAN,
                                .clip_frac = bits_double(0x7ff0000000000001ull),
                                .ratio_mean = -0.0, .mismatch_kl = 7e-5,
                                .is_weight_mean = 1.25, .tokens = SIZE_MAX};
    m->grad_norm = INFINITY;
    m->lr = 3e-6;
    m->reward_mean = -1.0 / 7.0;
    m->staleness = 0.5;
    m->stale = 11;
    m->train_tokens = 123456789012345ull;
    m->train_seconds = 2.75;
    m->wait_seconds = 5e-324;
    m->status = TERN_EINVAL;
    if (full) {
        m->n_consumed = 3;
        m->consumed = zalloc(3, sizeof *m->consumed);
        m->consumed[0] = 0, m->consumed[1] = UINT64_MAX, m->consumed[2] = 77;
        m->figures = make_figures();
        m->groups = make_groups();
        m->eval = make_snapshot();
        m->saved = dup_or_null("checkpoints/step-5.tmp");
        m->error = dup_or_null("");
        m->role = "trainer";
    }
    return m;
}

/* ---- comparing ---------------------------------------------------------------------- */

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Same JSON: same types, keys in the same order, reals bit for bit. */
static int same_json(const json_t *a, const json_t *b)
{
    if (!a || !b)
        return a == b;
    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_REAL:
        return same_bits(json_real_value(a), json_real_value(b));
    case JSON_INTEGER:
        return json_integer_value(a) == json_integer_value(b);
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same_json(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        void *ia = json_object_iter((json_t *)a), *ib = json_object_iter((json_t *)b);
        for (; ia && ib; ia = json_object_iter_next((json_t *)a, ia),
                         ib = json_object_iter_next((json_t *)b, ib))
            if (strcmp(json_object_iter_key(ia), json_object_iter_key(ib)) != 0 ||
                !same_json(json_object_iter_value(ia), json_object_iter_value(ib)))
                return 0;
        return !ia && !ib;
    }
    default:
        return 1; /* true, false, null: the type says it all */
    }
}

static void expect_same_snapshot(const tern_snapshot *a, const tern_snapshot *b)
{
    if (!a || !b) {
        cr_expect(a == b, "one snapshot is NULL, the other not");
        return;
    }
    const tern_tensor *ta, *tb;
    size_t na, nb;
    tern_snapshot_tensors(a, &ta, &na);
    tern_snapshot_tensors(b, &tb, &nb);
    cr_expect_eq(tern_snapshot_version(a), tern_snapshot_version(b));
    cr_assert_eq(na, nb);
    for (size_t i = 0; i < na; i++) {
        cr_expect_str_eq(ta[i].name, tb[i].name);
        cr_expect_eq(ta[i].dtype, tb[i].dtype);
        cr_expect_eq(ta[i].ndim, tb[i].ndim);
        cr_expect(memcmp(ta[i].shape, tb[i].shape, sizeof ta[i].shape) == 0, "tensor %zu", i);
        cr_assert_eq(ta[i].bytes, tb[i].bytes);
        cr_expect(ta[i].bytes == 0 || memcmp(ta[i].data, tb[i].data, ta[i].bytes) == 0,
                  "tensor %zu's data", i);
    }
}

static void expect_same(const void *x, const void *y)
{
    tern_msg_kind kind = *(const tern_msg_kind *)x;
    cr_assert_eq(*(const tern_msg_kind *)y, kind);
    if (kind == TERN_MSG_EXPLORE) {
        const tern_explore_job *a = x, *b = y;
        cr_expect_eq(a->batch, b->batch);
        cr_expect_eq(a->min_version, b->min_version);
        cr_expect_eq(a->plan_batch, b->plan_batch);
        cr_assert_eq(a->n, b->n);
        for (uint32_t i = 0; i < a->n; i++) {
            cr_expect_eq(a->task_index[i], b->task_index[i]);
            cr_expect(same_str(a->prompt[i], b->prompt[i]), "prompt %u", i);
            cr_expect(same_str(a->system[i], b->system[i]), "system %u", i);
            cr_expect(same_str(a->image ? a->image[i] : NULL, b->image[i]), "image %u", i);
        }
    } else if (kind == TERN_MSG_SFT_BATCH) {
        const tern_sft_job *a = x, *b = y;
        cr_expect_eq(a->step, b->step);
        cr_assert_eq(a->n, b->n);
        for (uint32_t i = 0; i < a->n; i++) {
            cr_expect(same_str(a->prompt[i], b->prompt[i]), "prompt %u", i);
            cr_expect(same_str(a->answer[i], b->answer[i]), "answer %u", i);
            cr_expect(same_str(a->system[i], b->system[i]), "system %u", i);
            cr_expect(same_str(a->image ? a->image[i] : NULL, b->image[i]), "image %u", i);
        }
    } else if (kind == TERN_MSG_ROLLOUT) {
        const tern_rollout_msg *a = x, *b = y;
        cr_expect_eq(a->batch, b->batch);
        cr_expect_eq(a->version, b->version);
        cr_expect_eq(a->explorer, b->explorer);
        cr_assert_eq(a->n, b->n);
        cr_assert_eq(a->group_size, b->group_size);
        cr_expect(same_bits(a->gen_seconds, b->gen_seconds));
        cr_expect(same_bits(a->wait_seconds, b->wait_seconds));
        cr_expect_eq(a->gen_tokens, b->gen_tokens);
        cr_expect_eq(a->done_unix_ns, b->done_unix_ns);
        cr_expect_eq(a->tool_calls, b->tool_calls);
        cr_expect_eq(a->tool_invalid, b->tool_invalid);
        cr_expect_eq(a->tool_failed, b->tool_failed);
        for (uint32_t i = 0; i < a->n; i++) {
            cr_expect_eq(a->task_index[i], b->task_index[i]);
            cr_assert_eq(a->prompt_len[i], b->prompt_len[i]);
            cr_expect(a->prompt_len[i] == 0 || memcmp(a->prompt_tokens[i], b->prompt_tokens[i],
                                                      4 * (size_t)a->prompt_len[i]) == 0);
            const char *image = a->image ? a->image[i] : NULL;
            cr_expect(same_str(image, b->image[i]), "image %u", i);
            cr_expect(!image || memcmp(a->image_sha256 + 32 * (size_t)i,
                                       b->image_sha256 + 32 * (size_t)i, 32) == 0,
                      "image %u's digest", i);
        }
        for (size_t i = 0; i < (size_t)a->n * a->group_size; i++) {
            const tern_response *ra = &a->resp[i], *rb = &b->resp[i];
            cr_assert_eq(ra->len, rb->len);
            cr_expect_eq(ra->finish, rb->finish);
            cr_assert(rb->tokens && rb->logp, "response %zu has its arrays", i);
            for (uint32_t k = 0; k < ra->len; k++) {
                cr_expect_eq(ra->tokens[k], rb->tokens[k]);
                cr_expect(same_bits_f(ra->logp[k], rb->logp[k]), "response %zu logp %u", i, k);
            }
            cr_expect(same_str(ra->text, rb->text), "response %zu text", i);
            cr_assert_eq(ra->n_segments, rb->n_segments, "response %zu segments", i);
            for (uint32_t k = 0; k < ra->n_segments; k++)
                cr_expect_eq(ra->seg_len[k], rb->seg_len[k], "response %zu segment %u", i, k);
            cr_assert_eq(ra->n_turns, rb->n_turns, "response %zu turns", i);
            for (uint32_t k = 0; k < ra->n_turns; k++)
                cr_expect(memcmp(&ra->turn_reward[k], &rb->turn_reward[k], sizeof(double)) == 0,
                          "response %zu turn reward %u", i, k);
            cr_expect_eq(ra->end, rb->end, "response %zu end", i);
            cr_expect_eq(ra->env_failure, rb->env_failure, "response %zu env failure", i);
            cr_expect(same_str(ra->env_reason, rb->env_reason), "response %zu reason", i);
            cr_assert_eq(ra->n_restarts, rb->n_restarts, "response %zu restarts", i);
            for (uint32_t k = 0; k < ra->n_restarts; k++)
                cr_expect_eq(ra->restart[k], rb->restart[k], "response %zu restart %u", i, k);
        }
    } else if (kind == TERN_MSG_REWARD_ASK) {
        const tern_reward_ask *a = x, *b = y;
        cr_expect_eq(a->route, b->route);
        cr_assert_eq(a->n, b->n);
        for (uint32_t i = 0; i < a->n; i++) {
            cr_expect(same_str(a->task[i], b->task[i]), "task %u", i);
            cr_expect(same_str(a->origin[i], b->origin[i]), "origin %u", i);
            cr_expect(same_str(a->response[i], b->response[i]), "response %u", i);
            cr_expect_eq(a->tokens[i], b->tokens[i]);
        }
    } else if (kind == TERN_MSG_REWARD_ANSWER) {
        const tern_reward_answer *a = x, *b = y;
        cr_assert_eq(a->n, b->n);
        for (uint32_t i = 0; i < a->n; i++) {
            const tern_reward_reply *p = &a->reply[i], *q = &b->reply[i];
            cr_expect_eq(p->failure, q->failure);
            cr_expect(same_bits(p->reward, q->reward), "verdict %u reward", i);
            cr_expect(same_str(p->reason, q->reason), "verdict %u reason", i);
            cr_assert_eq(p->n_comp, q->n_comp);
            for (uint32_t c = 0; c < p->n_comp; c++) {
                cr_expect(same_str(p->comp_name[c], q->comp_name[c]));
                cr_expect(same_bits(p->comp_value[c], q->comp_value[c]));
            }
        }
    } else if (kind == TERN_MSG_TRAIN) {
        const tern_train_msg *a = x, *b = y;
        cr_expect_eq(a->order, b->order);
        cr_expect_eq(a->step, b->step);
        cr_assert_eq(a->sft != NULL, b->sft != NULL);
        if (a->sft)
            expect_same(a->sft, b->sft);
        cr_assert_eq(a->n, b->n);
        for (uint32_t i = 0; i < a->n; i++) {
            cr_assert_eq(a->group_len[i], b->group_len[i]);
            cr_expect(memcmp(a->group[i], b->group[i], a->group_len[i]) == 0, "group %u", i);
        }
    } else {
        const tern_step_msg *a = x, *b = y;
        cr_expect_eq(a->step, b->step);
        cr_expect_eq(a->version, b->version);
        cr_expect_eq(a->batch, b->batch);
        cr_expect_eq(a->rollout_version, b->rollout_version);
        cr_assert_eq(a->n_consumed, b->n_consumed);
        for (size_t i = 0; i < a->n_consumed; i++)
            cr_expect_eq(a->consumed[i], b->consumed[i]);
        cr_expect(same_json(a->figures, b->figures), "figures");
        cr_expect(same_json(a->groups, b->groups), "groups");
        cr_expect_eq(a->published, b->published);
        cr_expect_eq(a->in_rl, b->in_rl);
        cr_expect_eq(a->rl_fresh, b->rl_fresh);
        cr_expect_eq(a->sft_step, b->sft_step);
        cr_expect(same_bits(a->loss.loss, b->loss.loss));
        cr_expect(same_bits(a->loss.pg_loss, b->loss.pg_loss));
        cr_expect(same_bits(a->loss.kl, b->loss.kl));
        cr_expect(same_bits(a->loss.entropy, b->loss.entropy));
        cr_expect(same_bits(a->loss.clip_frac, b->loss.clip_frac));
        cr_expect(same_bits(a->loss.ratio_mean, b->loss.ratio_mean));
        cr_expect(same_bits(a->loss.mismatch_kl, b->loss.mismatch_kl));
        cr_expect(same_bits(a->loss.is_weight_mean, b->loss.is_weight_mean));
        cr_expect_eq(a->loss.tokens, b->loss.tokens);
        cr_expect(same_bits(a->grad_norm, b->grad_norm));
        cr_expect(same_bits(a->lr, b->lr));
        cr_expect(same_bits(a->reward_mean, b->reward_mean));
        cr_expect(same_bits(a->staleness, b->staleness));
        cr_expect_eq(a->stale, b->stale);
        cr_expect_eq(a->train_tokens, b->train_tokens);
        cr_expect(same_bits(a->train_seconds, b->train_seconds));
        cr_expect(same_bits(a->wait_seconds, b->wait_seconds));
        expect_same_snapshot(a->eval, b->eval);
        cr_expect(same_str(a->saved, b->saved), "saved");
        cr_expect_eq(a->status, b->status);
        cr_expect(same_str(a->error, b->error), "error");
        cr_expect(same_str(a->role, b->role), "role");
    }
}

/* ---- round trips ----------------------------------------------------------------- */

static unsigned char *encode(const void *msg, size_t *len)
{
    unsigned char *buf;
    cr_assert_eq(tern_wire_encode(msg, &buf, len), TERN_OK, "%s", tern_error_message());
    cr_assert_geq(*len, 8);
    return buf;
}

/* Encode, decode, compare; encoding the decoded message gives the same bytes. */
static void round_trip(void *msg)
{
    size_t len, len2, heap = heap_in_use();
    unsigned char *buf = encode(msg, &len);
    void *back;
    cr_assert_eq(tern_wire_decode(buf, len, &back), TERN_OK, "%s", tern_error_message());
    expect_same(msg, back);
    unsigned char *again = encode(back, &len2);
    cr_expect(len2 == len && memcmp(buf, again, len) == 0, "re-encoding gives the same bytes");
    free(again);
    free(buf);
    tern_msg_free(back);
    expect_no_leak(heap, "a round trip");
    tern_msg_free(msg);
}

Test(wire, a_reward_ask_and_answer_round_trip)
{
    round_trip(make_reward_ask(0));
    round_trip(make_reward_ask(3));
    round_trip(make_reward_answer(0));
    round_trip(make_reward_answer(4));
}

Test(wire, a_train_order_round_trips)
{
    round_trip(make_train(TERN_TRAIN_SFT, 0));
    round_trip(make_train(TERN_TRAIN_RL_START, 0));
    round_trip(make_train(TERN_TRAIN_STEP, 3));
    round_trip(make_train(TERN_TRAIN_END, 0));
}

Test(wire, an_explore_job_round_trips)
{
    round_trip(make_explore(3));
    round_trip(make_explore(7));
    round_trip(make_explore(0));
    tern_explore_job *bare = zalloc(1, sizeof *bare); /* n = 0, no arrays at all */
    bare->kind = TERN_MSG_EXPLORE;
    round_trip(bare);
}

Test(wire, a_warm_up_job_round_trips)
{
    round_trip(make_sft(4));
    round_trip(make_sft(0));
}

Test(wire, a_rollout_round_trips)
{
    round_trip(make_rollout(2, 3));
    round_trip(make_rollout(0, 4));
    round_trip(make_rollout(3, 0));
    round_trip(make_rollout(1, 1));
}

/* tests/fuzz/corpus_wire, the fuzzer's start: one message of each kind, in
 * the current format (a stale one is refused at its header, and the fuzzer
 * then explores nothing past it). TERN_WIRE_CORPUS_WRITE=1 writes them
 * again from this file's samples. */
Test(wire, the_fuzz_corpus_is_in_the_current_format)
{
    struct { const char *name; void *msg; } c[] = {
        {"explore", make_explore(2)}, {"sft", make_sft(2)}, {"rollout", make_rollout(2, 3)},
        {"step_done", make_step(TERN_MSG_STEP_DONE, 1)},
        {"skipped", make_step(TERN_MSG_SKIPPED, 0)}, {"failed", make_step(TERN_MSG_FAILED, 0)},
        {"train_sft", make_train(TERN_TRAIN_SFT, 0)},
        {"train_step", make_train(TERN_TRAIN_STEP, 3)},
        {"reward_ask", make_reward_ask(2)}, {"reward_answer", make_reward_answer(2)}};
    const char *write = getenv("TERN_WIRE_CORPUS_WRITE");
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/tests/fuzz/corpus_wire/%s.bin", TERN_TEST_SOURCE_DIR,
                 c[i].name);
        if (write && *write) {
            unsigned char *b = NULL;
            size_t n = 0;
            cr_assert_eq(tern_wire_encode(c[i].msg, &b, &n), TERN_OK, "%s", tern_error_message());
            FILE *f = fopen(path, "wb");
            cr_assert(f, "%s", path);
            cr_assert_eq(fwrite(b, 1, n, f), n);
            fclose(f);
            free(b);
        }
        tern_msg_free(c[i].msg);
        FILE *f = fopen(path, "rb");
        cr_assert(f, "%s is missing", path);
        unsigned char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        void *m = NULL;
        cr_expect_eq(tern_wire_decode(buf, n, &m), TERN_OK, "%s: %s (run test_wire with "
                     "TERN_WIRE_CORPUS_WRITE=1)", path, tern_error_message());
        tern_msg_free(m);
    }
}

Test(wire, every_step_kind_round_trips_full_and_empty)
{
    for (int k = TERN_MSG_SFT_DONE; k <= TERN_MSG_FAILED; k++) {
        round_trip(make_step((tern_msg_kind)k, 1));
        round_trip(make_step((tern_msg_kind)k, 0));
    }
    const char *roles[] = {"explorer", "trainer", "reward", "master", NULL};
    for (size_t i = 0; i < 5; i++) {
        tern_step_msg *m = make_step(TERN_MSG_FAILED, 0);
        m->role = roles[i];
        m->error = dup_or_null("explorer 2: generate failed: out of memory");
        round_trip(m);
    }
}

Test(wire, a_step_message_keeps_only_figures_or_only_groups_or_an_empty_snapshot)
{
    tern_step_msg *m = make_step(TERN_MSG_STEP_DONE, 0);
    m->figures = json_object();
    round_trip(m);
    m = make_step(TERN_MSG_STEP_DONE, 0);
    m->groups = json_array();
    round_trip(m);
    m = make_step(TERN_MSG_RL_START, 0);
    m->eval = tern_snapshot_take(NULL, 0, -4);
    cr_assert_not_null(m->eval);
    round_trip(m);
}

Test(wire, figures_reals_read_back_bit_for_bit)
{
    tern_step_msg *m = make_step(TERN_MSG_STEP_DONE, 1);
    size_t len;
    unsigned char *buf = encode(m, &len);
    tern_step_msg *back;
    cr_assert_eq(tern_wire_decode(buf, len, (void **)&back), TERN_OK, "%s", tern_error_message());
    const char *keys[] = {"reward_mean", "tiny", "big", "subnormal", "max", "minus_zero", "third",
                          "one"};
    const double want[] = {0.1, 1e-300, -2.5e17, 5e-324, 1.7976931348623157e308, -0.0,
                           1.0 / 3.0, 1.0};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(back->figures, keys[i]);
        cr_assert(json_is_real(v), "%s stays a real", keys[i]);
        cr_expect(same_bits(json_real_value(v), want[i]), "%s: %.17g", keys[i],
                  json_real_value(v));
    }
    cr_expect(json_is_integer(json_object_get(back->figures, "groups")));
    cr_expect_eq(json_integer_value(json_object_get(back->figures, "groups")), 42);
    cr_expect_str_eq(back->role, "trainer");
    free(buf);
    tern_msg_free(back);
    tern_msg_free(m);
}

/* ---- what the encoder refuses ------------------------------------------------------ */

Test(wire, the_encoder_refuses_what_the_decoder_would)
{
    unsigned char *buf = (unsigned char *)"x";
    size_t len = 1;
    tern_msg_kind bad = (tern_msg_kind)0;
    cr_expect_eq(tern_wire_encode(&bad, &buf, &len), TERN_EINVAL);
    cr_expect(buf == NULL && len == 0);
    cr_expect(strstr(tern_error_message(), "unknown kind"), "%s", tern_error_message());
    bad = (tern_msg_kind)(TERN_MSG_REWARD_ANSWER + 1);
    cr_expect_eq(tern_wire_encode(&bad, &buf, &len), TERN_EINVAL);

    tern_step_msg *s = make_step(TERN_MSG_FAILED, 0);
    s->role = "planner";
    cr_expect_eq(tern_wire_encode(s, &buf, &len), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "planner"), "%s", tern_error_message());
    s->role = NULL;
    s->figures = json_array();
    cr_expect_eq(tern_wire_encode(s, &buf, &len), TERN_EINVAL);
    cr_expect(buf == NULL);
    tern_msg_free(s);

    tern_explore_job *j = make_explore(2);
    free(j->prompt[1]);
    j->prompt[1] = NULL;
    cr_expect_eq(tern_wire_encode(j, &buf, &len), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "prompt"), "%s", tern_error_message());
    tern_msg_free(j);

    tern_rollout_msg *r = make_rollout(1, 2);
    free(r->resp[1].text);
    r->resp[1].text = NULL;
    cr_expect_eq(tern_wire_encode(r, &buf, &len), TERN_EINVAL);
    tern_msg_free(r);

    /* a trajectory whose segments do not add up, or whose turns do not match */
    r = make_rollout(1, 3); /* response 2 is a trajectory of 5 tokens */
    r->resp[2].seg_len[1] = 3;
    cr_expect_eq(tern_wire_encode(r, &buf, &len), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "response 2") &&
              strstr(tern_error_message(), "do not add up"), "%s", tern_error_message());
    r->resp[2].seg_len[1] = 2;
    r->resp[2].n_turns = 1;
    cr_expect_eq(tern_wire_encode(r, &buf, &len), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "turn rewards"), "%s", tern_error_message());
    r->resp[2].n_turns = 2;
    r->resp[2].n_segments = 2;
    cr_expect_eq(tern_wire_encode(r, &buf, &len), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "even segment count"), "%s", tern_error_message());
    r->resp[2].n_segments = 3;
    /* a restart at a model segment, or past the segments */
    r->resp[2].n_restarts = 1;
    r->resp[2].restart = zalloc(1, sizeof *r->resp[2].restart);
    r->resp[2].restart[0] = 2;
    cr_expect_eq(tern_wire_encode(r, &buf, &len), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "restart"), "%s", tern_error_message());
    r->resp[2].restart[0] = 5;
    cr_expect_eq(tern_wire_encode(r, &buf, &len), TERN_EINVAL);
    r->resp[2].restart[0] = 1;
    cr_expect_eq(tern_wire_encode(r, &buf, &len), TERN_OK, "%s", tern_error_message());
    free(buf);
    tern_msg_free(r);

    /* an image without its digest */
    r = make_rollout(1, 1);
    free(r->image_sha256);
    r->image_sha256 = NULL;
    cr_expect_eq(tern_wire_encode(r, &buf, &len), TERN_EINVAL);
    cr_expect(strstr(tern_error_message(), "an image but no digest"), "%s",
              tern_error_message());
    tern_msg_free(r);
}

/* Messages built without image arrays (a text run) travel as if every
 * entry were NULL, and read back with NULL entries. */
Test(wire, messages_without_images_read_back_with_none)
{
    tern_explore_job *j = make_explore(3);
    for (uint32_t i = 0; i < j->n; i++)
        free(j->image[i]);
    free(j->image);
    j->image = NULL;
    round_trip(j);
    tern_sft_job *sft = make_sft(2);
    for (uint32_t i = 0; i < sft->n; i++)
        free(sft->image[i]);
    free(sft->image);
    sft->image = NULL;
    round_trip(sft);
    tern_rollout_msg *r = make_rollout(2, 2);
    for (uint32_t i = 0; i < r->n; i++)
        free(r->image[i]);
    free(r->image);
    free(r->image_sha256);
    r->image = NULL;
    r->image_sha256 = NULL;
    round_trip(r);
}

/* ---- what the decoder refuses --------------------------------------------------------- */

static void expect_refused(const unsigned char *bytes, size_t len, const char *word)
{
    /* a copy of exactly len bytes: AddressSanitizer sees a read past the end */
    unsigned char *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    if (len)
        memcpy(copy, bytes, len);
    void *m = (void *)1;
    tern_error_clear();
    size_t heap = heap_in_use();
    int rc = tern_wire_decode(copy, len, &m);
    if (rc != TERN_OK)
        expect_no_leak(heap, "a refused message");
    cr_expect_eq(rc, TERN_EINVAL, "%zu bytes: %s", len, tern_error_message());
    cr_expect_null(m);
    cr_expect(tern_error_message()[0] != '\0', "a message says why");
    if (word)
        cr_expect(strstr(tern_error_message(), word), "'%s' missing from: %s", word,
                  tern_error_message());
    if (rc == TERN_OK)
        tern_msg_free(m);
    free(copy);
}

static unsigned char *encode_kind(int which, size_t *len)
{
    void *m = which == 0   ? (void *)make_explore(3)
              : which == 1 ? (void *)make_sft(2)
              : which == 2 ? (void *)make_rollout(2, 2)
              : which == 3 ? (void *)make_step(TERN_MSG_STEP_DONE, 1)
              : which == 4 ? (void *)make_train(TERN_TRAIN_SFT, 1)
              : which == 5 ? (void *)make_train(TERN_TRAIN_STEP, 3)
              : which == 6 ? (void *)make_reward_ask(2)
                           : (void *)make_reward_answer(3);
    unsigned char *buf = encode(m, len);
    tern_msg_free(m);
    return buf;
}

Test(wire, every_truncation_is_refused)
{
    for (int which = 0; which < 8; which++) {
        size_t len;
        unsigned char *buf = encode_kind(which, &len);
        size_t heap = heap_in_use();
        for (size_t cut = 0; cut < len; cut++)
            expect_refused(buf, cut, NULL);
        expect_no_leak(heap, "truncations");
        free(buf);
    }
    expect_refused(NULL, 0, "ends inside");
}

Test(wire, a_flipped_byte_is_refused_or_decodes_to_a_whole_message)
{
    const unsigned char flips[] = {0xff, 0x01, 0x80};
    for (int which = 0; which < 8; which++) {
        size_t len;
        unsigned char *buf = encode_kind(which, &len);
        unsigned char *copy = malloc(len);
        cr_assert_not_null(copy);
        size_t heap = heap_in_use();
        for (size_t i = 0; i < len; i++)
            for (size_t f = 0; f < sizeof flips; f++) {
                memcpy(copy, buf, len);
                copy[i] ^= flips[f];
                void *m;
                int rc = tern_wire_decode(copy, len, &m);
                if (rc != TERN_OK) {
                    cr_assert_eq(rc, TERN_EINVAL, "byte %zu ^ %02x: %s", i, flips[f],
                                 tern_error_message());
                    cr_assert_null(m);
                    continue;
                }
                /* whatever it decoded to is a whole message: it encodes again */
                size_t n2;
                unsigned char *again;
                cr_assert_eq(tern_wire_encode(m, &again, &n2), TERN_OK, "byte %zu ^ %02x: %s",
                             i, flips[f], tern_error_message());
                free(again);
                tern_msg_free(m);
            }
        expect_no_leak(heap, "flipped bytes");
        free(copy);
        free(buf);
    }
}

Test(wire, a_bad_header_or_trailing_bytes_are_refused)
{
    size_t len;
    unsigned char *buf = encode_kind(0, &len);
    unsigned char *b = malloc(len + 1);
    cr_assert_not_null(b);
    memcpy(b, buf, len);
    b[0] = 'X';
    expect_refused(b, len, "TRNW");
    memcpy(b, buf, len);
    b[4] = 1; /* format 1: before explore jobs carried min_version */
    expect_refused(b, len, "format 1");
    const uint16_t kinds[] = {0, TERN_MSG_REWARD_ANSWER + 1, 0xffff};
    for (size_t i = 0; i < 3; i++) {
        memcpy(b, buf, len);
        b[6] = (unsigned char)kinds[i], b[7] = (unsigned char)(kinds[i] >> 8);
        expect_refused(b, len, "unknown kind");
    }
    memcpy(b, buf, len);
    b[len] = 0;
    expect_refused(b, len + 1, "after its last field");
    free(b);
    free(buf);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

Test(wire, bad_strings_and_roles_are_refused)
{
    tern_explore_job *j = make_explore(1); /* one task: prompt "What is 2 + 2?", system NULL */
    size_t len;
    unsigned char *buf = encode(j, &len);
    tern_msg_free(j);
    size_t prompt_tag = 8 + 28 + 4; /* header, batch, min_version, plan_batch, n, task_index[1] */
    cr_assert_eq(buf[prompt_tag], 1);
    buf[prompt_tag + 5 + 3] = 0; /* a NUL inside the prompt */
    expect_refused(buf, len, "NUL");
    buf[prompt_tag + 5 + 3] = 't';
    buf[prompt_tag] = 0; /* a NULL prompt */
    expect_refused(buf, len, "NULL");
    buf[prompt_tag] = 2;
    expect_refused(buf, len, "tag 2");
    buf[prompt_tag] = 1;
    put32(buf + prompt_tag + 1, UINT32_MAX); /* a 4 GiB prompt */
    expect_refused(buf, len, "ends inside");
    free(buf);

    tern_step_msg *s = make_step(TERN_MSG_FAILED, 0);
    s->role = "master";
    buf = encode(s, &len);
    tern_msg_free(s);
    cr_assert(memcmp(buf + len - 6, "master", 6) == 0, "the role comes last");
    buf[len - 1] = 's';
    expect_refused(buf, len, "role 'mastes'");
    free(buf);

    s = make_step(TERN_MSG_STEP_DONE, 0);
    s->figures = json_object();
    buf = encode(s, &len);
    tern_msg_free(s);
    /* the figures' text "{}" follows the fixed head: make it "[]" */
    size_t at = 8 + 40;
    cr_assert(buf[at] == 1 && memcmp(buf + at + 5, "{}", 2) == 0);
    memcpy(buf + at + 5, "[]", 2);
    expect_refused(buf, len, "not a JSON object");
    memcpy(buf + at + 5, "{]", 2);
    expect_refused(buf, len, "not JSON");
    free(buf);
}

/* Caps this test's own process (Criterion forks one per test) so that an
 * allocation of gigabytes fails and shows up as TERN_ENOMEM instead of
 * TERN_EINVAL. Not under AddressSanitizer, which reserves terabytes of
 * address space (there a huge allocation aborts the test). */
static void cap_memory(void)
{
#if !defined(__SANITIZE_ADDRESS__)
    struct rlimit rl = {512u << 20, 512u << 20};
    cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
#endif
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

Test(wire, a_forged_count_is_refused_before_anything_is_allocated)
{
    cap_memory();
    const uint64_t counts[] = {0xffffffffu, 0xffffffffffffffffull, 0x20000000u};
    size_t len;
    /* explore: n at 32 (after batch, min_version and plan_batch) */
    unsigned char *buf = encode_kind(0, &len);
    put32(buf + 32, UINT32_MAX);
    expect_refused(buf, len, "claims");
    free(buf);
    /* warm-up: n at 16 */
    buf = encode_kind(1, &len);
    put32(buf + 16, UINT32_MAX);
    expect_refused(buf, len, "claims");
    free(buf);
    /* rollout: n at 28, group_size at 32 */
    buf = encode_kind(2, &len);
    for (int which = 0; which < 3; which++) {
        unsigned char *b = malloc(len);
        cr_assert_not_null(b);
        memcpy(b, buf, len);
        if (which != 1)
            put32(b + 28, UINT32_MAX);
        if (which != 0)
            put32(b + 32, UINT32_MAX);
        expect_refused(b, len, "claims");
        free(b);
    }
    /* one response of 2^30 tokens */
    tern_rollout_msg *r = make_rollout(1, 1);
    free(buf);
    buf = encode(r, &len);
    tern_msg_free(r);
    /* header, fixed, prompt of 3 tokens, its image (tag, length, path, digest) */
    size_t resp = 8 + 100 + 8 + 4 * 3 + 5 + strlen("img/a.png") + 32;
    put32(buf + resp, 1u << 30);
    expect_refused(buf, len, "ends inside");
    free(buf);
    /* step: n_consumed at 40 */
    for (size_t i = 0; i < 3; i++) {
        buf = encode_kind(3, &len);
        put64(buf + 40, counts[i]);
        expect_refused(buf, len, "claims");
        free(buf);
    }
    /* the snapshot's tensor count, and one tensor's bytes */
    tern_step_msg *s = make_step(TERN_MSG_RL_START, 0);
    s->eval = make_snapshot();
    buf = encode(s, &len);
    tern_msg_free(s);
    size_t snap = 8 + 40 + 1 + 1 + 160; /* header, head, NULL figures and groups, fixed */
    cr_assert_eq(buf[snap], 1);
    for (size_t i = 0; i < 3; i++) {
        put64(buf + snap + 1 + 8, counts[i]);
        expect_refused(buf, len, "claims");
    }
    put64(buf + snap + 1 + 8, 2);
    size_t bytes_at = snap + 1 + 16 + 5 + strlen("model.layers.0.mlp.up_proj.weight") + 40;
    cr_assert_eq(buf[bytes_at], 24, "the first tensor's bytes");
    put64(buf + bytes_at, UINT64_MAX);
    expect_refused(buf, len, "ends inside");
    put64(buf + bytes_at, 24);
    put32(buf + bytes_at - 36, 5); /* ndim 5 */
    expect_refused(buf, len, "dimensions");
    free(buf);
}
