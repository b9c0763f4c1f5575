/* test_experience.c: the experience encoding every buffer carries
 * (core/src/experience), format 5: one record per group, with its image's
 * path and digest, each response a trajectory of segments. The round trip of
 * every field for groups of several shapes, with an image and without, with
 * trajectories, the byte layout (little-endian, so a durable buffer reads the
 * same anywhere), format 4 and 3 records still read, the
 * group statistics, the limits, and the refusal of truncated, joined,
 * corrupt, old-format and inconsistent records. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "experience/crc32c.h"
#include "experience/experience.h"

/* ---- groups to encode ---------------------------------------------------------- */

#define MAX_G 8
#define MAX_R 6

/* A group and the arrays its pointers point into. */
typedef struct group {
    tern_experience e;
    tern_exp_response resp[MAX_G];
    int32_t prompt[4];
    int32_t tokens[MAX_G][MAX_R];
    float logp[MAX_G][MAX_R];
} group;

/* The sample: 3 prompt tokens and 3 responses (2 tokens and 2 parts; no
 * token, a failed verdict; 1 token and 1 part). Its layout is spelt out
 * byte for byte in layout_is_little_endian_whatever_the_host. */
static void sample(group *g)
{
    memset(g, 0, sizeof *g);
    g->prompt[0] = 1000, g->prompt[1] = 1007, g->prompt[2] = -3972;
    g->tokens[0][0] = 5, g->tokens[0][1] = 6, g->tokens[2][0] = -7;
    g->logp[0][0] = -0.25f, g->logp[0][1] = -3.5f, g->logp[2][0] = -0.125f;
    g->resp[0] = (tern_exp_response){.version = 11, .finish = 1, .reward = 1.0, .accuracy = 1.0,
                                     .n_parts = 2, .len = 2, .tokens = g->tokens[0],
                                     .logp = g->logp[0]};
    g->resp[0].parts[0] = (tern_reward_part){"accuracy", 1.0};
    g->resp[0].parts[1] = (tern_reward_part){"format", -0.5};
    g->resp[1] = (tern_exp_response){.version = 10, .finish = 2, .failure = 4, .reward = 0,
                                     .accuracy = 0, .tokens = g->tokens[1],
                                     .logp = g->logp[1]};
    g->resp[2] = (tern_exp_response){.version = 11, .finish = 1, .reward = 0.5, .accuracy = 0,
                                     .n_parts = 1, .len = 1, .tokens = g->tokens[2],
                                     .logp = g->logp[2]};
    g->resp[2].parts[0] = (tern_reward_part){"format", 0.5};
    g->e = (tern_experience){.batch = 1234567890123LL, .version = -1, .task_index = 77,
                             .group = 3, .generated_ns = 1795000000123456789ull,
                             .rewarded_ns = 1795000000987654321ull, .domain = "math",
                             .task_id = "gsm8k-0042", .prompt_len = 3, .prompt = g->prompt,
                             .n = 3, .resp = g->resp};
    tern_experience_finish_stats(&g->e);
}
#define SAMPLE_BYTES 367u /* 96 + 14 text + 12 prompt + 106 + 58 + 81 responses */

/* A group of G responses, response i of i % (MAX_R + 1) tokens, every value
 * derived from `seed`; no domain, no task id, no prompt when `bare`. */
static void shaped(group *g, uint32_t G, int seed, int bare)
{
    memset(g, 0, sizeof *g);
    for (int k = 0; k < 4; k++)
        g->prompt[k] = seed * 100 + k;
    for (uint32_t i = 0; i < G; i++) {
        tern_exp_response *r = &g->resp[i];
        r->version = seed - (int64_t)i;
        r->finish = 1 + i % 2;
        r->failure = i == 5 ? 3 : 0;
        r->reward = (double)(seed + (int)i) / 7.0 - 0.5;
        r->accuracy = (double)(i % 2);
        r->len = bare ? 0 : i % (MAX_R + 1);
        for (uint32_t k = 0; k < r->len; k++) {
            g->tokens[i][k] = (int32_t)(seed * 1000 + (int)(i * 10 + k)) * (k % 2 ? -1 : 1);
            g->logp[i][k] = -0.03125f * (float)(k + i);
        }
        r->tokens = g->tokens[i];
        r->logp = g->logp[i];
        r->n_parts = bare ? 0 : i % 3;
        static const char *names[] = {"accuracy", "format", "length"};
        for (uint32_t c = 0; c < r->n_parts; c++)
            r->parts[c] = (tern_reward_part){names[c], r->reward * (double)(c + 1)};
    }
    g->e = (tern_experience){.batch = seed, .version = seed - 1, .task_index = (uint32_t)seed,
                             .group = (uint32_t)seed % 5, .generated_ns = (uint64_t)seed << 20,
                             .rewarded_ns = ((uint64_t)seed << 20) + 7,
                             .domain = bare ? NULL : "code", .task_id = bare ? NULL : "t-1",
                             .prompt_len = bare ? 0 : 4, .prompt = bare ? NULL : g->prompt,
                             .n = G, .resp = g->resp};
    tern_experience_finish_stats(&g->e);
}

/* e's encoding in a malloc'd buffer of exactly its size. */
static unsigned char *encode(const tern_experience *e, size_t *n)
{
    tern_error_clear();
    *n = tern_experience_bytes(e);
    cr_assert_gt(*n, 0, "%s", tern_error_message());
    unsigned char *buf = malloc(*n);
    cr_assert_not_null(buf);
    tern_experience_encode(e, buf);
    return buf;
}

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

static double lef64(const unsigned char *p)
{
    uint64_t u = le64(p);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void putf64(unsigned char *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(u >> (8 * i));
}

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

/* Decode buf, check that d equals e field by field, and that encoding d
 * gives buf again (the encoding is canonical). */
static void expect_same(const tern_experience *e, const tern_experience *d)
{
    cr_expect_eq(d->batch, e->batch);
    cr_expect_eq(d->version, e->version);
    cr_expect_eq(d->task_index, e->task_index);
    cr_expect_eq(d->group, e->group);
    cr_expect_eq(d->generated_ns, e->generated_ns);
    cr_expect_eq(d->rewarded_ns, e->rewarded_ns);
    cr_expect(same_bits(d->reward_mean, e->reward_mean));
    cr_expect(same_bits(d->reward_std, e->reward_std));
    cr_expect(same_bits(d->accuracy_mean, e->accuracy_mean));
    cr_expect_str_eq(d->domain, e->domain ? e->domain : "");
    cr_expect_str_eq(d->task_id, e->task_id ? e->task_id : "");
    int has_image = e->image && *e->image;
    if (has_image) {
        cr_assert_not_null(d->image);
        cr_expect_str_eq(d->image, e->image);
        cr_expect_eq(memcmp(d->image_sha256, e->image_sha256, 32), 0, "the image's digest");
    } else {
        cr_expect_null(d->image, "no image: NULL");
    }
    cr_assert_eq(d->prompt_len, e->prompt_len);
    for (uint32_t k = 0; k < e->prompt_len; k++)
        cr_expect_eq(d->prompt[k], e->prompt[k], "prompt token %u", k);
    cr_assert_eq(d->n, e->n);
    for (uint32_t i = 0; i < e->n; i++) {
        const tern_exp_response *x = &e->resp[i], *y = &d->resp[i];
        cr_expect_eq(y->version, x->version, "response %u", i);
        cr_expect_eq(y->finish, x->finish, "response %u", i);
        cr_expect_eq(y->failure, x->failure, "response %u", i);
        cr_expect(same_bits(y->reward, x->reward), "response %u", i);
        cr_expect(same_bits(y->accuracy, x->accuracy), "response %u", i);
        cr_assert_eq(y->n_parts, x->n_parts, "response %u", i);
        for (uint32_t c = 0; c < x->n_parts; c++) {
            cr_expect_str_eq(y->parts[c].name, x->parts[c].name);
            cr_expect(same_bits(y->parts[c].value, x->parts[c].value));
        }
        cr_assert_eq(y->len, x->len, "response %u", i);
        for (uint32_t k = 0; k < x->len; k++) {
            cr_expect_eq(y->tokens[k], x->tokens[k], "response %u token %u", i, k);
            cr_expect(same_bits(y->logp[k], x->logp[k]), "response %u logp %u", i, k);
        }
        /* the arrays are aligned for their types */
        cr_expect_eq((uintptr_t)y->tokens % _Alignof(int32_t), 0);
        cr_expect_eq((uintptr_t)y->logp % _Alignof(float), 0);
    }
    cr_expect_eq((uintptr_t)d->resp % _Alignof(tern_exp_response), 0);
    cr_expect_eq((uintptr_t)d->prompt % _Alignof(int32_t), 0);
}

/* Encode e, decode it, compare, re-encode: the same bytes. */
static void round_trip(const tern_experience *e, size_t want_bytes)
{
    size_t n;
    unsigned char *buf = encode(e, &n);
    if (want_bytes)
        cr_expect_eq(n, want_bytes);
    unsigned char *copy = malloc(n);
    memcpy(copy, buf, n);
    tern_experience d;
    cr_assert_eq(tern_experience_decode(buf, n, &d), TERN_OK, "%s", tern_error_message());
    cr_assert_not_null(d.owned);
    memset(buf, 0xee, n); /* the decoded group owns copies */
    free(buf);
    expect_same(e, &d);
    size_t m;
    unsigned char *again = encode(&d, &m);
    cr_assert_eq(m, n);
    cr_expect_eq(memcmp(again, copy, n), 0, "decode then encode gives the same bytes");
    free(again);
    free(copy);
    tern_experience_clear(&d);
    cr_expect_null(d.owned);
    cr_expect_null(d.resp);
}

Test(experience, crc32c_matches_the_published_check_value)
{
    cr_assert_eq(tern_crc32c(0, "123456789", 9), 0xe3069283u);
    /* in pieces, across the 8-byte stride, the same */
    uint32_t c = tern_crc32c(0, "1234", 4);
    cr_assert_eq(tern_crc32c(c, "56789", 5), 0xe3069283u);
    cr_assert_eq(tern_crc32c(0, "", 0), 0);
}

/* ---- round trips --------------------------------------------------------------- */

Test(experience, every_field_of_the_sample_round_trips)
{
    group g;
    sample(&g);
    round_trip(&g.e, SAMPLE_BYTES);
}

Test(experience, groups_of_several_shapes_round_trip)
{
    group g;
    for (uint32_t G = 1; G <= MAX_G; G++)
        for (int bare = 0; bare <= 1; bare++) {
            shaped(&g, G, (int)G * 3 + bare, bare);
            round_trip(&g.e, 0);
        }
    /* G = 1 with nothing but the header and one empty response */
    shaped(&g, 1, 9, 1);
    round_trip(&g.e, TERN_EXPERIENCE_HEADER + 34 + 24);
    /* G = 8, every response empty (R = 0), no parts */
    shaped(&g, 8, 4, 1);
    round_trip(&g.e, TERN_EXPERIENCE_HEADER + 8 * (34 + 24));
}

Test(experience, the_limits_exactly_round_trip)
{
    char text[TERN_EXPERIENCE_TEXT_MAX + 1], name[TERN_EXPERIENCE_NAME_MAX + 1];
    memset(text, 't', TERN_EXPERIENCE_TEXT_MAX), text[TERN_EXPERIENCE_TEXT_MAX] = '\0';
    memset(name, 'n', TERN_EXPERIENCE_NAME_MAX), name[TERN_EXPERIENCE_NAME_MAX] = '\0';
    group g;
    sample(&g);
    g.e.domain = text, g.e.task_id = text;
    g.resp[1].n_parts = TERN_EXPERIENCE_MAX_PARTS;
    for (uint32_t c = 0; c < TERN_EXPERIENCE_MAX_PARTS; c++)
        g.resp[1].parts[c] = (tern_reward_part){name, -(double)c};
    g.resp[1].finish = UINT16_MAX, g.resp[1].failure = UINT16_MAX;
    round_trip(&g.e, SAMPLE_BYTES - 14 + 2 * TERN_EXPERIENCE_TEXT_MAX +
                         TERN_EXPERIENCE_MAX_PARTS * (1 + TERN_EXPERIENCE_NAME_MAX + 8));
}

Test(experience, a_decoded_group_owns_one_block_the_struct_can_move_with)
{
    group g;
    sample(&g);
    size_t n;
    unsigned char *buf = encode(&g.e, &n);
    tern_experience d;
    cr_assert_eq(tern_experience_decode(buf, n, &d), TERN_OK, "%s", tern_error_message());
    free(buf);
    /* every pointer points into the one block */
    const char *lo = d.owned, *hi = lo + 3 * sizeof(tern_exp_response) + 256;
    const void *ptrs[] = {d.domain, d.task_id, d.prompt, d.resp, d.resp[0].tokens,
                          d.resp[0].logp, d.resp[0].parts[1].name, d.resp[2].parts[0].name};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++)
        cr_expect((const char *)ptrs[i] >= lo && (const char *)ptrs[i] < hi, "pointer %zu", i);
    tern_experience moved = d;
    tern_experience_clear(&moved);
    cr_expect_null(moved.owned);
    cr_expect_null(moved.resp);
    cr_expect_null(moved.prompt);
    /* clearing a group the caller built only empties it */
    sample(&g);
    tern_experience_clear(&g.e);
    cr_expect_eq(g.e.n, 0);
    cr_expect_eq(g.resp[0].len, 2, "the caller's arrays are left alone");
}

/* ---- statistics ---------------------------------------------------------------- */

Test(experience, statistics_are_population_figures_in_response_order)
{
    group g;
    sample(&g); /* rewards 1, 0, 0.5; accuracies 1, 0, 0 */
    cr_expect_eq(g.e.reward_mean, 0.5);
    cr_expect_float_eq(g.e.reward_std, sqrt(1.0 / 6.0), 1e-15);
    cr_expect_float_eq(g.e.accuracy_mean, 1.0 / 3.0, 1e-15);
    /* the documented formula, in the documented order, to the bit */
    double sum = 0, sq = 0, acc = 0;
    for (int i = 0; i < 3; i++) {
        double r2 = g.resp[i].reward * g.resp[i].reward;
        sum += g.resp[i].reward;
        sq += r2;
        acc += g.resp[i].accuracy;
    }
    double mean = sum / 3, m2 = mean * mean, var = sq / 3;
    var -= m2;
    cr_expect(same_bits(g.e.reward_std, sqrt(var > 0 ? var : 0)));
    cr_expect(same_bits(g.e.accuracy_mean, acc / 3));

    /* equal rewards: std exactly 0, never the root of a rounding below 0 */
    for (int i = 0; i < 3; i++)
        g.resp[i].reward = 0.1;
    tern_experience_finish_stats(&g.e);
    cr_expect(same_bits(g.e.reward_std, 0.0), "%.17g", g.e.reward_std);
    round_trip(&g.e, SAMPLE_BYTES);
}

Test(experience, statistics_of_huge_rewards_are_never_nan_and_round_trip)
{
    group g;
    sample(&g);
    /* squares overflow: inf - inf would be NaN; the std is 0 */
    g.resp[0].reward = g.resp[1].reward = g.resp[2].reward = 1e200;
    tern_experience_finish_stats(&g.e);
    cr_expect_eq(g.e.reward_std, 0.0);
    round_trip(&g.e, SAMPLE_BYTES);
    /* the sum overflows: an infinite mean, still the same bits both ways */
    g.resp[0].reward = g.resp[1].reward = 1.5e308;
    g.resp[2].reward = -1.0;
    tern_experience_finish_stats(&g.e);
    cr_expect(isinf(g.e.reward_mean));
    cr_expect(!isnan(g.e.reward_std));
    round_trip(&g.e, SAMPLE_BYTES);
}

/* ---- the layout ------------------------------------------------------------------ */

Test(experience, layout_is_little_endian_whatever_the_host)
{
    group g;
    sample(&g);
    size_t n;
    unsigned char *b = encode(&g.e, &n);
    cr_assert_eq(n, SAMPLE_BYTES);
    cr_expect_eq(memcmp(b, "TXP1", 4), 0);
    cr_expect_eq(le32(b + 4), 5);
    cr_expect_eq(le32(b + 8), SAMPLE_BYTES);
    cr_expect_eq(le32(b + 12), tern_crc32c(0, b + 16, n - 16));
    cr_expect_eq(le64(b + 16), 1234567890123ull);
    cr_expect_eq(le64(b + 24), UINT64_MAX); /* version -1 */
    cr_expect_eq(le32(b + 32), 77);
    cr_expect_eq(le32(b + 36), 3);
    cr_expect_eq(le32(b + 40), 3); /* G */
    cr_expect_eq(le32(b + 44), 3); /* P */
    cr_expect_eq(le64(b + 48), 1795000000123456789ull);
    cr_expect_eq(le64(b + 56), 1795000000987654321ull);
    cr_expect(same_bits(lef64(b + 64), g.e.reward_mean));
    cr_expect(same_bits(lef64(b + 72), g.e.reward_std));
    cr_expect(same_bits(lef64(b + 80), g.e.accuracy_mean));
    cr_expect_eq(le16(b + 88), 4);  /* domain bytes */
    cr_expect_eq(le16(b + 90), 10); /* task id bytes */
    cr_expect_eq(le16(b + 92), 0); /* no image */
    cr_expect_eq(le16(b + 94), 0);
    cr_expect_eq(memcmp(b + 96, "mathgsm8k-0042", 14), 0);
    cr_expect_eq(le32(b + 110), 1000);
    cr_expect_eq(le32(b + 118), (uint32_t)-3972);
    /* response 0 at 122 */
    cr_expect_eq(le64(b + 122), 11);
    cr_expect_eq(le32(b + 130), 2);  /* R */
    cr_expect_eq(le16(b + 134), 1);  /* finish */
    cr_expect_eq(le16(b + 136), 0);  /* failure */
    cr_expect_eq(lef64(b + 138), 1.0);
    cr_expect_eq(lef64(b + 146), 1.0);
    cr_expect_eq(le16(b + 154), 2);  /* parts */
    cr_expect_eq(b[156], 8);
    cr_expect_eq(memcmp(b + 157, "accuracy", 8), 0);
    cr_expect_eq(lef64(b + 165), 1.0);
    cr_expect_eq(b[173], 6);
    cr_expect_eq(memcmp(b + 174, "format", 6), 0);
    cr_expect_eq(lef64(b + 180), -0.5);
    cr_expect_eq(le32(b + 188), 5);
    cr_expect_eq(le32(b + 192), 6);
    cr_expect_eq(le32(b + 196), 0xbe800000u); /* -0.25f */
    cr_expect_eq(le32(b + 200), 0xc0600000u); /* -3.5f */
    /* response 0's trajectory at 204: one model segment of its 2 tokens */
    cr_expect_eq(le16(b + 204), 1);  /* S */
    cr_expect_eq(le16(b + 206), 0);  /* K */
    cr_expect_eq(le16(b + 208), 0);  /* end: an answer */
    cr_expect_eq(le16(b + 210), 0);  /* no environment failure */
    cr_expect_eq(le32(b + 212), 2);  /* its tokens */
    cr_expect_eq(le32(b + 216), 1);  /* model */
    cr_expect_eq(le64(b + 220), 11); /* the response's version */
    /* response 1 at 228: no tokens, no parts, a failed verdict */
    cr_expect_eq(le64(b + 228), 10);
    cr_expect_eq(le32(b + 236), 0);
    cr_expect_eq(le16(b + 240), 2);
    cr_expect_eq(le16(b + 242), 4);
    cr_expect_eq(le16(b + 260), 0);
    cr_expect_eq(le16(b + 262), 1);  /* one model segment of no tokens */
    cr_expect_eq(le32(b + 270), 0);
    /* response 2 at 286 */
    cr_expect_eq(le32(b + 294), 1);
    cr_expect_eq(lef64(b + 302), 0.5);
    cr_expect_eq(le16(b + 318), 1);
    cr_expect_eq(b[320], 6);
    cr_expect_eq(lef64(b + 327), 0.5);
    cr_expect_eq(le32(b + 335), (uint32_t)-7);
    cr_expect_eq(le32(b + 339), 0xbe000000u); /* -0.125f */
    cr_expect_eq(le16(b + 343), 1);
    cr_expect_eq(le32(b + 351), 1);
    free(b);
}

/* ---- limits ---------------------------------------------------------------------- */

/* tern_experience_bytes(e) is 0 and the message holds `word`. */
static void expect_over(const tern_experience *e, const char *word)
{
    tern_error_clear();
    cr_expect_eq(tern_experience_bytes(e), 0, "refused: %s", word);
    cr_expect(strstr(tern_error_message(), word), "'%s' missing from the message: %s", word,
              tern_error_message());
}

Test(experience, fields_over_their_limits_are_refused_when_encoding)
{
    char big[TERN_EXPERIENCE_TEXT_MAX + 2], name[TERN_EXPERIENCE_NAME_MAX + 2];
    memset(big, 'd', sizeof big - 1), big[sizeof big - 1] = '\0';
    memset(name, 'n', sizeof name - 1), name[sizeof name - 1] = '\0';
    group g;
    sample(&g);
    g.e.domain = big;
    expect_over(&g.e, "domain is 1025 bytes");
    sample(&g);
    g.e.task_id = big;
    expect_over(&g.e, "task id is 1025 bytes");

    sample(&g);
    g.e.n = 0;
    expect_over(&g.e, "0 responses");
    g.e.n = TERN_EXPERIENCE_MAX_RESPONSES + 1;
    expect_over(&g.e, "65537 responses");

    sample(&g);
    g.resp[2].n_parts = TERN_EXPERIENCE_MAX_PARTS + 1;
    expect_over(&g.e, "response 2 of an experience has 17 reward parts");
    sample(&g);
    g.resp[0].parts[1].name = "";
    expect_over(&g.e, "reward part 1 of response 0 has a name of 0 bytes");
    g.resp[0].parts[1].name = NULL;
    expect_over(&g.e, "a name of 0 bytes");
    g.resp[0].parts[1].name = name;
    expect_over(&g.e, "a name of 65 bytes");

    sample(&g);
    g.resp[1].finish = 65536;
    expect_over(&g.e, "finish 65536");
    sample(&g);
    g.resp[1].failure = 70000;
    expect_over(&g.e, "failure 70000");

    /* what the decoder would refuse is refused here already */
    sample(&g);
    g.resp[1].reward = NAN;
    expect_over(&g.e, "response 1 of an experience has reward nan");
    sample(&g);
    g.resp[2].accuracy = -INFINITY;
    expect_over(&g.e, "accuracy -inf");
    sample(&g);
    g.resp[0].parts[0].value = INFINITY;
    expect_over(&g.e, "reward part 0 (accuracy) of response 0 is inf");
    sample(&g);
    g.resp[0].reward = 0.75; /* without finish_stats */
    expect_over(&g.e, "statistics disagree with its responses");
    expect_over(&g.e, "tern_experience_finish_stats");
    sample(&g);
    g.e.accuracy_mean += 1e-6; /* more than rounding */
    expect_over(&g.e, "statistics disagree");

    /* over 4 GiB: counted, never read */
    sample(&g);
    g.e.prompt_len = UINT32_MAX;
    g.e.prompt = NULL;
    expect_over(&g.e, "over the 4 GiB");
    sample(&g);
    g.resp[1].len = 1u << 29; /* 8 bytes a token: exactly 4 GiB, plus the rest */
    expect_over(&g.e, "over the 4 GiB");
}

/* ---- refusals ---------------------------------------------------------------- */

/* Decode `len` bytes of buf: expect TERN_EINVAL, every word of `words` in the
 * message, and nothing handed over. */
static void expect_refused(const unsigned char *buf, size_t len, const char *const *words)
{
    tern_experience d;
    memset(&d, 0x5a, sizeof d);
    tern_error_clear();
    cr_assert_eq(tern_experience_decode(buf, len, &d), TERN_EINVAL);
    const char *msg = tern_error_message();
    for (const char *const *w = words; *w; w++)
        cr_expect(strstr(msg, *w), "'%s' missing from the message: %s", *w, msg);
    cr_expect_null(d.owned, "a refused record hands nothing over");
    cr_expect_null(d.resp);
    cr_expect_null(d.prompt);
    cr_expect_eq(d.n, 0);
}
#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

Test(experience, wrong_magic_and_unknown_formats_are_refused)
{
    group g;
    sample(&g);
    size_t n;
    unsigned char *buf = encode(&g.e, &n);
    memcpy(buf, "NOPE", 4);
    expect_refused(buf, n, WORDS("not a tern experience", "magic"));
    memcpy(buf, "TXP1", 4);
    buf[4] = 1; /* format 1: native order, never stored */
    expect_refused(buf, n, WORDS("format 1", "not known", "reads formats 3 to 5"));
    buf[4] = 6;
    expect_refused(buf, n, WORDS("format 6 is not known to this tern (it reads formats 3 to "
                                 "5)"));
    free(buf);
}

Test(experience, format_2_is_refused_with_what_to_do)
{
    /* a complete format-2 record as the older tern wrote it: its 104-byte
     * header and one prompt token */
    unsigned char old[108] = {0};
    memcpy(old, "TXP1", 4);
    put32(old + 4, 2);
    put32(old + 8, sizeof old);
    put32(old + 88, 1); /* P */
    put32(old + 104, 42);
    put32(old + 12, tern_crc32c(0, old + 16, sizeof old - 16));
    expect_refused(old, sizeof old,
                   WORDS("format 2", "one record per response", "older tern",
                         "reads formats 3 to 5", "one record per group", "finish the run",
                         "remove the buffer's file"));
}

Test(experience, every_truncation_and_joined_record_is_refused)
{
    group g;
    sample(&g);
    size_t n;
    unsigned char *buf = encode(&g.e, &n);
    for (size_t len = 0; len < n; len++) {
        /* exactly `len` bytes, so a read past them is caught by the sanitizers */
        unsigned char *cut = malloc(len ? len : 1);
        memcpy(cut, buf, len);
        tern_experience d;
        cr_assert_eq(tern_experience_decode(cut, len, &d), TERN_EINVAL, "%zu of %zu bytes", len,
                     n);
        cr_assert_null(d.owned);
        free(cut);
    }
    expect_refused(buf, n - 4, WORDS("has 363 bytes", "header says 367", "truncated"));
    expect_refused(buf, 10, WORDS("10 bytes is too short"));
    unsigned char *two = malloc(2 * n);
    memcpy(two, buf, n), memcpy(two + n, buf, n);
    expect_refused(two, 2 * n, WORDS("has 734 bytes", "header says 367", "joined"));
    free(two);
    free(buf);
}

Test(experience, every_flipped_bit_is_refused)
{
    group g;
    sample(&g);
    size_t n;
    unsigned char *buf = encode(&g.e, &n);
    for (size_t bit = 0; bit < 8 * n; bit++) {
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        tern_experience d;
        cr_assert_eq(tern_experience_decode(buf, n, &d), TERN_EINVAL, "bit %zu", bit);
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    buf[150] ^= 0x10;
    expect_refused(buf, n, WORDS("corrupt", "checksum is"));
    free(buf);
}

/* Make the checksum agree again after a change: the inner checks must catch
 * what the checksum no longer does. */
static void reseal(unsigned char *buf, size_t n)
{
    put32(buf + 12, tern_crc32c(0, buf + 16, n - 16));
}

/* The sample's encoding with `n` bytes at `off` replaced by `bytes`, resealed,
 * then refused with `words`. */
static void patched(size_t off, const void *bytes, size_t n, const char *const *words)
{
    group g;
    sample(&g);
    size_t len;
    unsigned char *buf = encode(&g.e, &len);
    cr_assert_leq(off + n, len);
    memcpy(buf + off, bytes, n);
    reseal(buf, len);
    expect_refused(buf, len, words);
    free(buf);
}

static void patched32(size_t off, uint32_t v, const char *const *words)
{
    unsigned char b[4];
    put32(b, v);
    patched(off, b, 4, words);
}

static void patched16(size_t off, uint16_t v, const char *const *words)
{
    unsigned char b[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    patched(off, b, 2, words);
}

static void patchedf64(size_t off, double v, const char *const *words)
{
    unsigned char b[8];
    putf64(b, v);
    patched(off, b, 8, words);
}

/* ---- the image (format 4) and format 3 ------------------------------------------ */

/* The sample with an image: its path and a digest of 32 distinct bytes. */
static void sample_with_image(group *g)
{
    sample(g);
    g->e.image = "data/img/a.png";
    for (int i = 0; i < 32; i++)
        g->e.image_sha256[i] = (unsigned char)(0xa0 + i);
}
#define IMAGE_BYTES (14u + 32u) /* the path, the digest */

Test(experience, a_group_with_an_image_round_trips_with_its_path_and_digest)
{
    group g;
    sample_with_image(&g);
    round_trip(&g.e, SAMPLE_BYTES + IMAGE_BYTES);
    size_t n;
    unsigned char *b = encode(&g.e, &n);
    cr_expect_eq(le16(b + 92), 14); /* image path bytes */
    cr_expect_eq(le16(b + 94), 0);
    cr_expect_eq(memcmp(b + 96, "mathgsm8k-0042data/img/a.png", 28), 0);
    cr_expect_eq(b[124], 0xa0);
    cr_expect_eq(b[155], 0xbf);
    cr_expect_eq(le32(b + 156), 1000); /* the prompt after the digest */
    /* every cut is refused, inside the path and the digest too */
    for (size_t len = 96; len < 160; len++)
        cr_expect_eq(tern_experience_decode(b, len, &(tern_experience){0}), TERN_EINVAL);
    free(b);
    /* "" is no image, as NULL */
    g.e.image = "";
    round_trip(&g.e, SAMPLE_BYTES);
}

Test(experience, a_bad_image_field_is_refused)
{
    group g;
    sample_with_image(&g);
    size_t n;
    unsigned char *b = encode(&g.e, &n);
    b[112] = 0; /* inside the path */
    reseal(b, n);
    expect_refused(b, n, WORDS("image path holds a NUL byte"));
    free(b);
    b = encode(&g.e, &n);
    b[92] = 94, b[93] = 1; /* a path of 350 bytes, longer than the record */
    reseal(b, n);
    expect_refused(b, n, WORDS("ends inside its image path or digest"));
    free(b);
    char long_path[TERN_EXPERIENCE_PATH_MAX + 2];
    memset(long_path, 'p', sizeof long_path - 1), long_path[sizeof long_path - 1] = '\0';
    g.e.image = long_path;
    expect_over(&g.e, "image path is 4097 bytes");
}

/* The sample as format 4 wrote it (before trajectories): its format 5
 * encoding without each response's trajectory part (the one-segment
 * trajectories at 204, 262 and 343, 24 bytes each), resealed. *n: its bytes. */
static unsigned char *sample_as_format_4(size_t *n)
{
    group g;
    sample(&g);
    size_t len;
    unsigned char *b = encode(&g.e, &len);
    static const size_t cut[3] = {204, 262, 343};
    unsigned char *old = malloc(len);
    size_t m = 0, from = 0;
    for (int k = 0; k < 3; k++) {
        memcpy(old + m, b + from, cut[k] - from);
        m += cut[k] - from;
        from = cut[k] + 24;
    }
    memcpy(old + m, b + from, len - from);
    m += len - from;
    free(b);
    put32(old + 4, 4);
    put32(old + 8, (uint32_t)m);
    reseal(old, m);
    *n = m;
    return old;
}

/* Format 4, written before trajectories: every response is read as one
 * model segment at its version, without turn rewards. */
Test(experience, format_4_records_are_read_as_one_answer_responses)
{
    group g;
    sample(&g);
    size_t n;
    unsigned char *b = sample_as_format_4(&n);
    cr_assert_eq(n, SAMPLE_BYTES - 72);
    tern_experience d;
    cr_assert_eq(tern_experience_decode(b, n, &d), TERN_OK, "%s", tern_error_message());
    expect_same(&g.e, &d);
    for (uint32_t i = 0; i < d.n; i++) {
        const tern_exp_response *r = &d.resp[i];
        cr_assert_eq(r->n_segments, 1, "response %u", i);
        cr_expect_eq(r->segments[0].len, r->len);
        cr_expect_eq(r->segments[0].kind, TERN_SEGMENT_MODEL);
        cr_expect_eq(r->segments[0].version, r->version);
        cr_expect_eq(r->n_turns, 0);
        cr_expect_eq(r->end, TERN_END_ANSWER);
    }
    /* written again, it is format 5: the sample's bytes */
    size_t m;
    unsigned char *again = encode(&d, &m);
    cr_expect_eq(m, SAMPLE_BYTES);
    unsigned char *want = encode(&g.e, &m);
    cr_expect_eq(memcmp(again, want, m), 0);
    free(again), free(want);
    tern_experience_clear(&d);
    free(b);
}

/* Format 3, written before images: format 4 without an image but for its
 * format number and a u32 zero at 92. Still read. */
Test(experience, format_3_records_are_read_as_groups_without_an_image)
{
    group g;
    sample(&g);
    size_t n;
    unsigned char *b = sample_as_format_4(&n);
    put32(b + 4, 3);
    reseal(b, n);
    tern_experience d;
    cr_assert_eq(tern_experience_decode(b, n, &d), TERN_OK, "%s", tern_error_message());
    expect_same(&g.e, &d);
    cr_expect_null(d.image);
    cr_expect_eq(d.resp[0].n_segments, 1);
    tern_experience_clear(&d);
    /* its offset 92 is a u32 zero: an image count there is no format 3 */
    b[92] = 14;
    reseal(b, n);
    expect_refused(b, n, WORDS("reserved field (offset 92)", "not 0"));
    b[92] = 0, b[94] = 1;
    reseal(b, n);
    expect_refused(b, n, WORDS("reserved field (offset 92)"));
    free(b);
}

/* ---- trajectories (format 5) ---------------------------------------------------- */

/* The sample with response 0 a trajectory of three turns: model 1 token
 * (version 11), context 2, model 1 (version 12)... kept in g's arrays. */
typedef struct traj {
    group g;
    tern_exp_segment seg[3];
    double turn[2];
} traj;

static void sample_trajectory(traj *t)
{
    sample(&t->g);
    tern_exp_response *r = &t->g.resp[0];
    r->len = 4;
    t->g.tokens[0][2] = 77, t->g.tokens[0][3] = 78;
    t->g.logp[0][1] = 0.0f, t->g.logp[0][2] = 0.0f, t->g.logp[0][3] = -0.5f;
    t->seg[0] = (tern_exp_segment){1, TERN_SEGMENT_MODEL, 11};
    t->seg[1] = (tern_exp_segment){2, TERN_SEGMENT_CONTEXT, 11};
    t->seg[2] = (tern_exp_segment){1, TERN_SEGMENT_MODEL, 12};
    t->turn[0] = 0.25, t->turn[1] = 0.75;
    r->segments = t->seg;
    r->n_segments = 3;
    r->turn_reward = t->turn;
    r->n_turns = 2;
    r->end = TERN_END_DONE;
    r->reward = 1.0;
    t->g.resp[2].end = TERN_END_FAILED;
    t->g.resp[2].env_failure = 3;
    tern_experience_finish_stats(&t->g.e);
}

Test(experience, a_trajectory_round_trips_with_its_segments_and_turn_rewards)
{
    traj t;
    sample_trajectory(&t);
    /* response 0: 2 more tokens (16 bytes), 2 more segments (32), 2 turn rewards (16) */
    round_trip(&t.g.e, SAMPLE_BYTES + 64);
    size_t n;
    unsigned char *b = encode(&t.g.e, &n);
    tern_experience d;
    cr_assert_eq(tern_experience_decode(b, n, &d), TERN_OK, "%s", tern_error_message());
    const tern_exp_response *r = &d.resp[0];
    cr_assert_eq(r->n_segments, 3);
    for (int k = 0; k < 3; k++) {
        cr_expect_eq(r->segments[k].len, t.seg[k].len, "segment %d", k);
        cr_expect_eq(r->segments[k].kind, t.seg[k].kind, "segment %d", k);
        cr_expect_eq(r->segments[k].version, t.seg[k].version, "segment %d", k);
    }
    cr_assert_eq(r->n_turns, 2);
    cr_expect(r->turn_reward[0] == 0.25 && r->turn_reward[1] == 0.75);
    cr_expect_eq(r->end, TERN_END_DONE);
    cr_expect_eq(d.resp[2].end, TERN_END_FAILED);
    cr_expect_eq(d.resp[2].env_failure, 3);
    cr_expect_eq((uintptr_t)r->segments % _Alignof(tern_exp_segment), 0);
    cr_expect_eq((uintptr_t)r->turn_reward % _Alignof(double), 0);
    tern_experience_clear(&d);
    free(b);
}

Test(experience, a_restarted_trajectory_keeps_its_prompt_segment)
{
    traj t;
    sample_trajectory(&t);
    t.seg[1].kind = TERN_SEGMENT_PROMPT; /* the second call started over */
    size_t n;
    unsigned char *b = encode(&t.g.e, &n);
    tern_experience d;
    cr_assert_eq(tern_experience_decode(b, n, &d), TERN_OK, "%s", tern_error_message());
    cr_assert_eq(d.resp[0].n_segments, 3);
    cr_expect_eq(d.resp[0].segments[1].kind, TERN_SEGMENT_PROMPT);
    cr_expect_eq(d.resp[0].segments[1].len, 2);
    cr_expect_eq(d.resp[0].segments[2].kind, TERN_SEGMENT_MODEL);
    tern_experience_clear(&d);
    free(b);
}

Test(experience, a_trajectory_that_does_not_add_up_is_refused)
{
    traj t;
    sample_trajectory(&t);
    t.seg[1].len = 3;
    expect_over(&t.g.e, "segments hold 5 tokens, the response 4");
    sample_trajectory(&t);
    t.seg[1].kind = 9;
    expect_over(&t.g.e, "segment 1 has kind 9");
    sample_trajectory(&t);
    t.seg[0].kind = TERN_SEGMENT_PROMPT; /* the group's prompt is the first */
    expect_over(&t.g.e, "segment 0 is a prompt at the start");
    sample_trajectory(&t);
    t.seg[1].kind = TERN_SEGMENT_PROMPT, t.seg[1].len = 0, t.seg[2].len = 3;
    expect_over(&t.g.e, "segment 1 is a prompt of no tokens");
    sample_trajectory(&t);
    t.seg[2].kind = TERN_SEGMENT_PROMPT, t.g.resp[0].n_turns = 0;
    expect_over(&t.g.e, "segment 2 is a prompt at the end");
    sample_trajectory(&t);
    t.g.resp[0].n_turns = 1;
    expect_over(&t.g.e, "1 turn rewards for 2 model turns");
    sample_trajectory(&t);
    t.turn[1] = NAN;
    expect_over(&t.g.e, "turn reward 1 is nan");
    sample_trajectory(&t);
    t.g.resp[1].end = 99;
    expect_over(&t.g.e, "end is 99");
    sample_trajectory(&t);
    t.g.resp[1].env_failure = 7;
    expect_over(&t.g.e, "environment failure is 7");
    /* the decoder refuses the same, from the bytes: response 0's segments
     * start at 204 + 16 (its 2 more tokens) + 8 */
    sample_trajectory(&t);
    size_t n;
    unsigned char *b = encode(&t.g.e, &n);
    put32(b + 228 + 16, 5); /* segment 1: 5 tokens */
    reseal(b, n);
    expect_refused(b, n, WORDS("response 0", "no trajectory", "segments hold 7 tokens"));
    free(b);
    b = encode(&t.g.e, &n);
    b[220] = 0, b[221] = 0; /* S = 0 */
    reseal(b, n);
    expect_refused(b, n, WORDS("response 0", "no segments"));
    free(b);
    b = encode(&t.g.e, &n);
    b[220] = 0xff; /* S = 255: past the end */
    reseal(b, n);
    expect_refused(b, n, WORDS("ends inside the segments of response 0"));
    free(b);
}

Test(experience, header_fields_out_of_range_are_refused)
{
    patched32(40, 0, WORDS("has 0 responses", "a group has 1 to 65536"));
    patched32(40, TERN_EXPERIENCE_MAX_RESPONSES + 1, WORDS("has 65537 responses"));
    patched16(94, 1, WORDS("reserved field (offset 94)", "not 0"));
    patched16(92, TERN_EXPERIENCE_PATH_MAX + 1, WORDS("image path is 4097 bytes"));
    patched16(88, TERN_EXPERIENCE_TEXT_MAX + 1, WORDS("domain is 1025 bytes"));
    patched16(90, 0xffff, WORDS("task id is 65535 bytes"));
}

Test(experience, inner_sizes_too_large_are_refused)
{
    /* more responses than the record holds; fewer */
    patched32(40, 4, WORDS("ends inside response 3 of its 4"));
    patched32(40, 2, WORDS("81 bytes after its last response"));
    /* the domain past the end of the record */
    patched16(88, 300, WORDS("ends inside its domain"));
    /* a prompt of 2^32 - 1 tokens: counted in 64 bits, refused */
    patched32(44, UINT32_MAX, WORDS("ends inside its prompt", "4294967295 tokens"));
    /* response tokens: too many for what is left, and the maximum */
    patched32(130, 1000, WORDS("ends inside response 0", "1000 tokens need 8000 bytes"));
    patched32(130, UINT32_MAX, WORDS("ends inside response 0", "4294967295 tokens"));
    /* too many parts, and parts that run past the end */
    patched16(154, TERN_EXPERIENCE_MAX_PARTS + 1, WORDS("response 0", "17 reward parts"));
    patched(320, "\x3f", 1, WORDS("ends inside reward part 0 of response 2"));
}

Test(experience, bad_names_and_text_are_refused)
{
    patched(156, "\0", 1, WORDS("reward part 0 of response 0", "name of 0 bytes"));
    patched(156, "\x41", 1, WORDS("reward part 0 of response 0", "name of 65 bytes"));
    patched(173, "\xff", 1, WORDS("reward part 1 of response 0", "name of 255 bytes"));
    patched(159, "\0", 1, WORDS("reward part 0 of response 0", "NUL"));
    patched(98, "\0", 1, WORDS("domain or task id holds a NUL"));
}

Test(experience, non_finite_values_are_refused)
{
    patchedf64(138, NAN, WORDS("response 0", "reward nan", "finite"));
    patchedf64(302, -INFINITY, WORDS("response 2", "reward -inf"));
    patchedf64(146, INFINITY, WORDS("response 0", "accuracy inf"));
    patchedf64(165, NAN, WORDS("reward part 0 (accuracy) of response 0", "nan"));
    patchedf64(327, INFINITY, WORDS("reward part 0 (format) of response 2", "inf"));
}

Test(experience, statistics_that_disagree_with_the_responses_are_refused)
{
    const char *const *w = WORDS("statistics disagree with its responses");
    patchedf64(64, 0.5 + 1e-6, w);              /* the mean, off by more than rounding */
    patchedf64(72, 0.0, w);                     /* the std */
    patchedf64(80, 1.0 / 3 + 1e-6, w);          /* the accuracy mean */
    patchedf64(138, 0.75, w);                   /* a reward the mean no longer matches */
    patchedf64(252, 1.0, w);                    /* response 1's accuracy */
    patchedf64(64, NAN, w);
}

/* A figure a writer rounded otherwise (one ulp off) is the same figure. */
Test(experience, statistics_within_rounding_are_accepted)
{
    group g;
    sample(&g);
    size_t n;
    unsigned char *buf = encode(&g.e, &n);
    double m;
    memcpy(&m, buf + 64, sizeof m);
    m = nextafter(m, 1);
    memcpy(buf + 64, &m, sizeof m);
    reseal(buf, n);
    tern_experience d;
    cr_expect_eq(tern_experience_decode(buf, n, &d), TERN_OK, "%s", tern_error_message());
    tern_experience_clear(&d);
    free(buf);
}
