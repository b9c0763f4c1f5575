/* test_experience.c: the experience encoding every buffer carries
 * (core/src/experience): the round trip of every field, the byte layout
 * (little-endian, so a durable buffer reads the same anywhere), the limits,
 * and the refusal of truncated, padded, corrupt and inconsistent records. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "experience/crc32c.h"
#include "experience/experience.h"

static int32_t tokens[5] = {1000, 1007, 1014, 1021, -3972};
static float logp[2] = {-0.25f, -3.5f};

static tern_experience sample(void)
{
    tern_experience e = {.batch = 1234567890123LL, .version = -1, .task_index = 77,
                         .group = 3, .sample = 5, .finish = 2, .reward = 0.75,
                         .accuracy = 1.0, .advantage = NAN,
                         .generated_ns = 1795000000123456789ull,
                         .rewarded_ns = 1795000000987654321ull, .domain = "math",
                         .task_id = "gsm8k-0042", .n_parts = 2, .prompt_len = 3,
                         .response_len = 2, .tokens = tokens, .logp = logp};
    e.parts[0] = (tern_reward_part){"accuracy", 1.0};
    e.parts[1] = (tern_reward_part){"format", -0.5};
    return e;
}

/* The sample's encoding in a malloc'd buffer of exactly its size. */
static unsigned char *encode(const tern_experience *e, size_t *n)
{
    *n = tern_experience_bytes(e);
    cr_assert_gt(*n, 0, "%s", tern_error_message());
    unsigned char *buf = malloc(*n);
    cr_assert_not_null(buf);
    tern_experience_encode(e, buf);
    return buf;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

Test(experience, crc32c_matches_the_published_check_value)
{
    cr_assert_eq(tern_crc32c(0, "123456789", 9), 0xe3069283u);
    /* in pieces, across the 8-byte stride, the same */
    uint32_t c = tern_crc32c(0, "1234", 4);
    cr_assert_eq(tern_crc32c(c, "56789", 5), 0xe3069283u);
    cr_assert_eq(tern_crc32c(0, "", 0), 0);
}

Test(experience, every_field_round_trips)
{
    tern_experience e = sample();
    size_t n;
    unsigned char *buf = encode(&e, &n);
    /* 104 header + 4 domain + 10 task id + (1+8+8) + (1+6+8) parts + 5*4 tokens + 2*4 logp */
    cr_assert_eq(n, 104 + 4 + 10 + 17 + 15 + 20 + 8);
    tern_experience d;
    cr_assert_eq(tern_experience_decode(buf, n, &d), TERN_OK, "%s", tern_error_message());
    memset(buf, 0xee, n); /* the decoded record owns copies */
    free(buf);
    cr_expect_eq(d.batch, e.batch);
    cr_expect_eq(d.version, -1);
    cr_expect_eq(d.task_index, 77);
    cr_expect_eq(d.group, 3);
    cr_expect_eq(d.sample, 5);
    cr_expect_eq(d.finish, 2);
    cr_expect_eq(d.reward, 0.75);
    cr_expect_eq(d.accuracy, 1.0);
    cr_expect(isnan(d.advantage), "advantage NaN (not computed) survives");
    cr_expect_eq(d.generated_ns, e.generated_ns);
    cr_expect_eq(d.rewarded_ns, e.rewarded_ns);
    cr_expect_str_eq(d.domain, "math");
    cr_expect_str_eq(d.task_id, "gsm8k-0042");
    cr_assert_eq(d.n_parts, 2);
    cr_expect_str_eq(d.parts[0].name, "accuracy");
    cr_expect_eq(d.parts[0].value, 1.0);
    cr_expect_str_eq(d.parts[1].name, "format");
    cr_expect_eq(d.parts[1].value, -0.5);
    cr_assert_eq(d.prompt_len, 3);
    cr_assert_eq(d.response_len, 2);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(d.tokens[i], tokens[i], "token %d", i);
    cr_expect_eq(d.logp[0], -0.25f);
    cr_expect_eq(d.logp[1], -3.5f);
    /* a copy of the struct owns the block; clearing it frees everything */
    tern_experience moved = d;
    tern_experience_clear(&moved);
    cr_assert_null(moved.tokens);
    cr_assert_null(moved.owned);
}

Test(experience, empty_strings_parts_and_response_round_trip)
{
    int32_t one[1] = {42};
    tern_experience e = {.batch = 1, .prompt_len = 1, .tokens = one};
    size_t n;
    unsigned char *buf = encode(&e, &n);
    cr_assert_eq(n, 104 + 4);
    tern_experience d;
    cr_assert_eq(tern_experience_decode(buf, n, &d), TERN_OK, "%s", tern_error_message());
    free(buf);
    cr_expect_str_eq(d.domain, "");
    cr_expect_str_eq(d.task_id, "");
    cr_expect_eq(d.n_parts, 0);
    cr_expect_eq(d.response_len, 0);
    cr_expect_eq(d.tokens[0], 42);
    tern_experience_clear(&d);
}

Test(experience, layout_is_little_endian_whatever_the_host)
{
    tern_experience e = sample();
    size_t n;
    unsigned char *buf = encode(&e, &n);
    cr_expect_eq(memcmp(buf, "TXP1", 4), 0);
    cr_expect_eq(le32(buf + 4), 2);
    cr_expect_eq(le32(buf + 8), n);
    cr_expect_eq(le32(buf + 12), tern_crc32c(0, buf + 16, n - 16));
    cr_expect_eq(le32(buf + 16), (uint32_t)(1234567890123LL & 0xffffffff));
    cr_expect_eq(le32(buf + 20), (uint32_t)(1234567890123LL >> 32));
    cr_expect_eq(le32(buf + 24), 0xffffffffu); /* version -1 */
    cr_expect_eq(le32(buf + 88), 3);
    cr_expect_eq(le32(buf + 92), 2);
    cr_expect_eq(buf[96], 4); /* domain bytes */
    cr_expect_eq(memcmp(buf + 104, "mathgsm8k-0042", 14), 0);
    cr_expect_eq(buf[118], 8); /* first part's name length */
    cr_expect_eq(le32(buf + n - 8 - 20), 1000); /* first token */
    free(buf);
}

/* ---- limits ---------------------------------------------------------------------- */

Test(experience, fields_over_their_limits_are_refused_when_encoding)
{
    char big[TERN_EXPERIENCE_TEXT_MAX + 2];
    memset(big, 'd', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tern_experience e = sample();
    e.domain = big;
    tern_error_clear();
    cr_expect_eq(tern_experience_bytes(&e), 0);
    cr_expect(strstr(tern_error_message(), "domain is 1025 bytes"), "%s", tern_error_message());

    e = sample();
    e.n_parts = TERN_EXPERIENCE_MAX_PARTS + 1;
    cr_expect_eq(tern_experience_bytes(&e), 0);
    cr_expect(strstr(tern_error_message(), "17 reward parts"), "%s", tern_error_message());

    e = sample();
    e.parts[1].name = "";
    cr_expect_eq(tern_experience_bytes(&e), 0);
    cr_expect(strstr(tern_error_message(), "reward part 1"), "%s", tern_error_message());

    /* at the limits exactly: accepted and round-tripped */
    big[TERN_EXPERIENCE_TEXT_MAX] = '\0';
    e = sample();
    e.task_id = big;
    size_t n;
    unsigned char *buf = encode(&e, &n);
    tern_experience d;
    cr_assert_eq(tern_experience_decode(buf, n, &d), TERN_OK, "%s", tern_error_message());
    cr_expect_eq(strlen(d.task_id), TERN_EXPERIENCE_TEXT_MAX);
    tern_experience_clear(&d);
    free(buf);
}

/* ---- refusals ---------------------------------------------------------------- */

/* Decode `len` bytes of buf: expect TERN_EINVAL, every word of `words` in the
 * message, and nothing handed over. */
static void expect_refused(const unsigned char *buf, size_t len, const char *const *words)
{
    tern_experience d;
    tern_error_clear();
    cr_assert_eq(tern_experience_decode(buf, len, &d), TERN_EINVAL);
    const char *msg = tern_error_message();
    for (const char *const *w = words; *w; w++)
        cr_expect(strstr(msg, *w), "'%s' missing from the message: %s", *w, msg);
    cr_expect_null(d.tokens, "a refused record hands nothing over");
    cr_expect_null(d.owned);
}

Test(experience, wrong_magic_and_unknown_format_are_refused)
{
    tern_experience e = sample();
    size_t n;
    unsigned char *buf = encode(&e, &n);
    memcpy(buf, "NOPE", 4);
    expect_refused(buf, n, (const char *const[]){"not a tern experience", "magic", NULL});
    memcpy(buf, "TXP1", 4);
    buf[4] = 1; /* format 1: native order, never stored */
    expect_refused(buf, n, (const char *const[]){"format 1", "not known", "reads format 2", NULL});
    free(buf);
}

Test(experience, every_truncation_and_padding_is_refused)
{
    tern_experience e = sample();
    size_t n;
    unsigned char *buf = encode(&e, &n);
    for (size_t len = 0; len < n; len++) {
        /* exactly `len` bytes, so a read past them is caught by the sanitizers */
        unsigned char *cut = malloc(len ? len : 1);
        memcpy(cut, buf, len);
        tern_experience d;
        cr_assert_eq(tern_experience_decode(cut, len, &d), TERN_EINVAL, "%zu of %zu bytes", len,
                     n);
        free(cut);
    }
    expect_refused(buf, n - 4, (const char *const[]){"has 174 bytes", "header says 178",
                                                     "truncated", NULL});
    unsigned char *padded = calloc(n + 8, 1);
    memcpy(padded, buf, n);
    expect_refused(padded, n + 8, (const char *const[]){"186 bytes", "header says 178", NULL});
    free(padded);
    free(buf);
}

Test(experience, every_flipped_bit_is_refused)
{
    tern_experience e = sample();
    size_t n;
    unsigned char *buf = encode(&e, &n);
    for (size_t bit = 0; bit < 8 * n; bit++) {
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        tern_experience d;
        cr_assert_eq(tern_experience_decode(buf, n, &d), TERN_EINVAL, "bit %zu", bit);
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    buf[150] ^= 0x10;
    expect_refused(buf, n, (const char *const[]){"corrupt", "checksum", NULL});
    free(buf);
}

/* Change the header, then make the checksum agree again: the inner checks
 * must catch what the checksum no longer does. */
static void reseal(unsigned char *buf, size_t n)
{
    uint32_t c = tern_crc32c(0, buf + 16, n - 16);
    for (int i = 0; i < 4; i++)
        buf[12 + i] = (unsigned char)(c >> (8 * i));
}

Test(experience, sizes_disagreeing_inside_a_sealed_record_are_refused)
{
    tern_experience e = sample();
    size_t n;
    unsigned char *buf = encode(&e, &n);
    buf[92] = 9; /* response tokens 9 instead of 2 */
    reseal(buf, n);
    expect_refused(buf, n, (const char *const[]){"3 prompt and 9 response", "need 84", NULL});
    free(buf);

    buf = encode(&e, &n);
    buf[96] = 0xff, buf[97] = 0x7f; /* domain of 32767 bytes */
    reseal(buf, n);
    expect_refused(buf, n, (const char *const[]){"inconsistent", NULL});
    free(buf);

    buf = encode(&e, &n);
    buf[97] = 0x01; /* domain of 260 bytes: past the end of the record */
    reseal(buf, n);
    expect_refused(buf, n, (const char *const[]){"ends inside its domain", NULL});
    free(buf);

    buf = encode(&e, &n);
    buf[118] = 0; /* the first part has no name */
    reseal(buf, n);
    expect_refused(buf, n, (const char *const[]){"reward part 0", NULL});
    free(buf);

    buf = encode(&e, &n);
    buf[106] = 0; /* a NUL inside the domain ("ma\0h") */
    reseal(buf, n);
    expect_refused(buf, n, (const char *const[]){"NUL", NULL});
    free(buf);

    buf = encode(&e, &n);
    buf[121] = 0; /* a NUL inside the first part's name */
    reseal(buf, n);
    expect_refused(buf, n, (const char *const[]){"reward part 0", "NUL", NULL});
    free(buf);

    buf = encode(&e, &n);
    buf[102] = 1; /* the reserved word */
    reseal(buf, n);
    expect_refused(buf, n, (const char *const[]){"inconsistent", NULL});
    free(buf);
}
