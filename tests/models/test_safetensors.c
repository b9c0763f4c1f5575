/* test_safetensors.c: the safetensors reader and writer
 * (plugins/models/transformer/hf/safetensors.h): bit-exact round trips, BF16
 * and F16 conversion against hand-computed values, every refusal of a
 * malformed file with what its message must say, truncation, and the
 * atomicity of writes. Corrupt files are built byte by byte. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include "hf/safetensors.h"

/* ---- helpers ------------------------------------------------------------ */

static char *work_path(const char *name)
{
    static char buf[4][1024];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, sizeof buf[0], "%s/st_%s", TERN_TEST_WORK_DIR, name);
    return p;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static uint8_t *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    cr_assert_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* A file of: 8-byte length of `header`, header, then dlen data bytes. */
static const char *make_file(const char *name, const char *header, const void *data, size_t dlen)
{
    const char *path = work_path(name);
    size_t hl = strlen(header);
    uint8_t *b = malloc(8 + hl + dlen + 1);
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, header, hl);
    if (dlen)
        memcpy(b + 8 + hl, data, dlen);
    write_bytes(path, b, 8 + hl + dlen);
    free(b);
    return path;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* st_open(path) must fail with a message holding every fragment given. */
static void expect_refused(const char *path, const char *frag1, const char *frag2)
{
    st_file f;
    char err[1024] = "";
    int rc = st_open(path, &f, err, sizeof err);
    cr_assert_eq(rc, -1, "%s was accepted", path);
    cr_assert_not_null(strstr(err, frag1), "message \"%s\" lacks \"%s\"", err, frag1);
    if (frag2)
        cr_assert_not_null(strstr(err, frag2), "message \"%s\" lacks \"%s\"", err, frag2);
    cr_assert_null(f.tensors);
    st_close(&f); /* harmless after a failure */
}

/* A header with one tensor entry `entry`, and `dlen` zero data bytes. */
static void expect_entry_refused(const char *entry, size_t dlen, const char *frag1,
                                 const char *frag2)
{
    char header[2048];
    snprintf(header, sizeof header, "{\"t\": %s}", entry);
    uint8_t zeros[64] = {0};
    cr_assert_leq(dlen, sizeof zeros);
    /* one file per test process: tests may run in parallel, and rewriting a
     * file another process has mapped would make it fault */
    char name[64];
    snprintf(name, sizeof name, "entry_%d", (int)getpid());
    const char *path = make_file(name, header, zeros, dlen);
    expect_refused(path, frag1, frag2);
    unlink(path);
}

static uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

/* ---- round trips -------------------------------------------------------- */

Test(safetensors, round_trip_is_bit_exact)
{
    float a[5] = {1.0f, -0.0f, INFINITY, -INFINITY, 1e-45f /* the smallest subnormal */};
    float b[6] = {3.14159265f, -2.5f, 1e30f, -1e-30f, 0.1f, 65504.0f};
    float scalar[1] = {42.0f};
    uint32_t nan_bits = 0x7fc01234u; /* a NaN with a payload must survive too */
    memcpy(&a[4], &nan_bits, 4);
    int64_t sa[1] = {5}, sb[2] = {2, 3}, se[2] = {0, 7};
    st_write_item items[4] = {
        {"model.embed_tokens.weight", 2, sb, b},
        {"a", 1, sa, a},
        {"scalar", 0, NULL, scalar},
        {"empty", 2, se, NULL},
    };
    const char *path = work_path("round_trip.safetensors");
    char err[1024] = "";
    cr_assert_eq(st_write_f32(path, items, 4, "{\"format\": \"pt\", \"step\": \"7\"}", err,
                              sizeof err), 0, "%s", err);
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_assert(!exists(tmp), "the temp file remains after a write");

    st_file f;
    cr_assert_eq(st_open(path, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.n_tensors, 4);
    cr_assert_eq(f.data_start % 8, 0, "data section at %zu is not 8-byte aligned", f.data_start);
    for (size_t i = 0; i < 4; i++) /* header order is kept */
        cr_assert_str_eq(f.tensors[i].name, items[i].name);
    cr_assert_str_eq(st_metadata_get(&f, "format"), "pt");
    cr_assert_str_eq(st_metadata_get(&f, "step"), "7");
    cr_assert_null(st_metadata_get(&f, "nope"));
    cr_assert_null(st_find(&f, "nope"));

    const st_tensor *t = st_find(&f, "model.embed_tokens.weight");
    cr_assert_not_null(t);
    cr_assert_eq(t->dtype, ST_F32);
    cr_assert_str_eq(t->dtype_name, "F32");
    cr_assert_eq(t->ndim, 2);
    cr_assert_eq(t->shape[0], 2);
    cr_assert_eq(t->shape[1], 3);
    cr_assert_eq(t->numel, 6);
    cr_assert_eq(t->nbytes, 24);
    float got[6];
    cr_assert_eq(st_to_f32(t, got, 6, err, sizeof err), 0, "%s", err);
    cr_assert_eq(memcmp(got, b, sizeof b), 0);

    t = st_find(&f, "a");
    cr_assert_eq(t->ndim, 1);
    cr_assert_eq(st_to_f32(t, got, 5, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(float_bits(got[i]), float_bits(a[i]), "a[%d]: %08x != %08x", i,
                     float_bits(got[i]), float_bits(a[i]));

    t = st_find(&f, "scalar");
    cr_assert_eq(t->ndim, 0);
    cr_assert_eq(t->numel, 1);
    cr_assert_eq(st_to_f32(t, got, 1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(got[0], 42.0f);

    t = st_find(&f, "empty");
    cr_assert_eq(t->numel, 0);
    cr_assert_eq(t->nbytes, 0);
    cr_assert_eq(st_to_f32(t, got, 0, err, sizeof err), 0, "%s", err);
    st_close(&f);
    st_close(&f); /* twice is harmless */
}

Test(safetensors, header_is_space_padded_compact_json)
{
    float x[3] = {1, 2, 3};
    int64_t s[1] = {3};
    st_write_item it = {"x", 1, s, x};
    const char *path = work_path("padded.safetensors");
    char err[1024] = "";
    cr_assert_eq(st_write_f32(path, &it, 1, NULL, err, sizeof err), 0, "%s", err);
    size_t n;
    uint8_t *b = read_bytes(path, &n);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--)
        hl = hl << 8 | b[i];
    cr_assert_eq(hl % 8, 0, "header length %llu is not a multiple of 8", (unsigned long long)hl);
    cr_assert_eq(n, 8 + hl + 12);
    const char *want = "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}}";
    cr_assert_eq(memcmp(b + 8, want, strlen(want)), 0, "header: %.*s", (int)hl, b + 8);
    for (size_t i = 8 + strlen(want); i < 8 + hl; i++)
        cr_assert_eq(b[i], ' ', "padding byte %zu is %d", i, b[i]);
    free(b);
}

Test(safetensors, many_tensors_in_order)
{
    enum { N = 40 };
    float data[N][4];
    int64_t shape[2] = {2, 2};
    st_write_item items[N];
    char names[N][32];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "model.layers.%d.w", N - i); /* not sorted */
        for (int j = 0; j < 4; j++)
            data[i][j] = (float)(i * 4 + j) / 7.0f;
        items[i] = (st_write_item){names[i], 2, shape, data[i]};
    }
    const char *path = work_path("many.safetensors");
    char err[1024] = "";
    cr_assert_eq(st_write_f32(path, items, N, NULL, err, sizeof err), 0, "%s", err);
    st_file f;
    cr_assert_eq(st_open(path, &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.n_tensors, N);
    for (int i = 0; i < N; i++) {
        cr_assert_str_eq(f.tensors[i].name, names[i]);
        float got[4];
        cr_assert_eq(st_to_f32(&f.tensors[i], got, 4, err, sizeof err), 0, "%s", err);
        cr_assert_eq(memcmp(got, data[i], sizeof got), 0);
    }
    st_close(&f);
}

Test(safetensors, open_buffer_validates_memory)
{
    float x[2] = {0.5f, -0.25f};
    int64_t s[1] = {2};
    st_write_item it = {"x", 1, s, x};
    const char *path = work_path("buffer.safetensors");
    char err[1024] = "";
    cr_assert_eq(st_write_f32(path, &it, 1, NULL, err, sizeof err), 0, "%s", err);
    size_t n;
    uint8_t *b = read_bytes(path, &n);
    st_file f;
    cr_assert_eq(st_open_buffer(b, n, "mem", &f, err, sizeof err), 0, "%s", err);
    cr_assert_eq(f.mapped, 0);
    float got[2];
    cr_assert_eq(st_to_f32(st_find(&f, "x"), got, 2, err, sizeof err), 0, "%s", err);
    cr_assert_eq(got[0], 0.5f);
    cr_assert_eq(got[1], -0.25f);
    st_close(&f);
    cr_assert_eq(st_open_buffer(b, n - 1, "mem", &f, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "mem: tensor x: data ends at byte 8"), "%s", err);
    free(b);
}

/* ---- conversion --------------------------------------------------------- */

Test(safetensors, bf16_conversion)
{
    /* bf16 is the top half of a float */
    const uint16_t in[9] = {0x3F80, 0xC000, 0x8000, 0x7F80, 0xFF80, 0x0001, 0x3E20, 0x7FC1,
                            0x4049};
    const uint32_t want[9] = {
        0x3F800000u, /* 1 */
        0xC0000000u, /* -2 */
        0x80000000u, /* -0 */
        0x7F800000u, /* inf */
        0xFF800000u, /* -inf */
        0x00010000u, /* a subnormal: 2^-133 */
        0x3E200000u, /* 0.15625 */
        0x7FC10000u, /* nan with payload */
        0x40490000u, /* 3.140625 */
    };
    uint8_t data[18];
    for (int i = 0; i < 9; i++) {
        data[2 * i] = (uint8_t)(in[i] & 0xff);
        data[2 * i + 1] = (uint8_t)(in[i] >> 8);
    }
    const char *path = make_file("bf16.safetensors",
                                 "{\"w\":{\"dtype\":\"BF16\",\"shape\":[3,3],"
                                 "\"data_offsets\":[0,18]}}",
                                 data, sizeof data);
    st_file f;
    char err[1024] = "";
    cr_assert_eq(st_open(path, &f, err, sizeof err), 0, "%s", err);
    const st_tensor *t = st_find(&f, "w");
    cr_assert_eq(t->dtype, ST_BF16);
    cr_assert_eq(t->nbytes, 18);
    float got[9];
    cr_assert_eq(st_to_f32(t, got, 9, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(float_bits(got[i]), want[i], "bf16 %04x -> %08x, want %08x", in[i],
                     float_bits(got[i]), want[i]);
    cr_assert_float_eq(got[6], 0.15625f, 0);
    cr_assert_float_eq(got[8], 3.140625f, 0);
    st_close(&f);
}

Test(safetensors, f16_conversion)
{
    const uint16_t in[13] = {0x3C00, 0xC000, 0x0001, 0x03FF, 0x0400, 0x7BFF, 0x8000,
                             0x7C00, 0xFC00, 0x7E00, 0x3555, 0x8001, 0x0000};
    const float want[13] = {
        1.0f,
        -2.0f,
        0x1p-24f,           /* the smallest subnormal half */
        1023 * 0x1p-24f,    /* the largest subnormal */
        0x1p-14f,           /* the smallest normal */
        65504.0f,           /* the largest finite */
        -0.0f,
        INFINITY,
        -INFINITY,
        NAN,
        0.333251953125f,    /* 1/3 rounded to half: 0x3555 */
        -0x1p-24f,
        0.0f,
    };
    uint8_t data[26];
    for (int i = 0; i < 13; i++) {
        data[2 * i] = (uint8_t)(in[i] & 0xff);
        data[2 * i + 1] = (uint8_t)(in[i] >> 8);
    }
    const char *path = make_file("f16.safetensors",
                                 "{\"h\":{\"dtype\":\"F16\",\"shape\":[13],"
                                 "\"data_offsets\":[0,26]}}",
                                 data, sizeof data);
    st_file f;
    char err[1024] = "";
    cr_assert_eq(st_open(path, &f, err, sizeof err), 0, "%s", err);
    const st_tensor *t = st_find(&f, "h");
    cr_assert_eq(t->dtype, ST_F16);
    float got[13];
    cr_assert_eq(st_to_f32(t, got, 13, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < 13; i++) {
        if (isnan(want[i])) {
            cr_assert(isnan(got[i]), "f16 %04x -> %g, want nan", in[i], (double)got[i]);
            cr_assert_eq(float_bits(got[i]), 0x7FC00000u);
        } else {
            cr_assert_eq(float_bits(got[i]), float_bits(want[i]), "f16 %04x -> %a, want %a",
                         in[i], (double)got[i], (double)want[i]);
        }
    }
    cr_assert(signbit(got[6]), "-0 lost its sign");
    st_close(&f);
}

Test(safetensors, unaligned_f32_data)
{
    /* a 7-byte header leaves the data at file byte 15; the tensor starts 1 byte in */
    const char *header = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]}}";
    uint8_t data[9] = {0xEE};
    float x[2] = {1.5f, -7.25f};
    memcpy(data + 1, x, 8);
    const char *path = make_file("unaligned.safetensors", header, data, sizeof data);
    st_file f;
    char err[1024] = "";
    cr_assert_eq(st_open(path, &f, err, sizeof err), 0, "%s", err);
    float got[2];
    cr_assert_eq(st_to_f32(st_find(&f, "x"), got, 2, err, sizeof err), 0, "%s", err);
    cr_assert_eq(got[0], 1.5f);
    cr_assert_eq(got[1], -7.25f);
    st_close(&f);
}

Test(safetensors, other_dtypes_open_but_are_refused_when_read)
{
    uint8_t data[16 + 8] = {0};
    const char *path = make_file("i64.safetensors",
                                 "{\"pos\":{\"dtype\":\"I64\",\"shape\":[2],"
                                 "\"data_offsets\":[0,16]},"
                                 "\"w\":{\"dtype\":\"F32\",\"shape\":[2],"
                                 "\"data_offsets\":[16,24]}}",
                                 data, sizeof data);
    st_file f;
    char err[1024] = "";
    cr_assert_eq(st_open(path, &f, err, sizeof err), 0, "%s", err);
    const st_tensor *t = st_find(&f, "pos");
    cr_assert_eq(t->dtype, ST_OTHER);
    cr_assert_str_eq(t->dtype_name, "I64");
    float got[2];
    cr_assert_eq(st_to_f32(t, got, 2, err, sizeof err), -1);
    cr_assert_str_eq(err, "tensor pos has dtype I64; tern reads F32, BF16 and F16");
    /* and a wrong element count */
    cr_assert_eq(st_to_f32(st_find(&f, "w"), got, 1, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "tensor w has 2 elements (shape [2]) but 1 were asked for"),
                       "%s", err);
    st_close(&f);
}

/* ---- refusals ----------------------------------------------------------- */

Test(safetensors, refuses_short_and_odd_files)
{
    expect_refused(work_path("does-not-exist"), "cannot open", "No such file");
    expect_refused(TERN_TEST_WORK_DIR, "cannot open: Is a directory", "give a safetensors file");
    write_bytes(work_path("empty"), "", 0);
    expect_refused(work_path("empty"), "the file is 0 bytes", "8-byte header length");
    write_bytes(work_path("five"), "abcde", 5);
    expect_refused(work_path("five"), "the file is 5 bytes", NULL);
}

Test(safetensors, refuses_a_fifo_without_blocking)
{
    alarm(20); /* an open that blocks on the FIFO ends the test here */
    const char *path = work_path("fifo.safetensors");
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    char want[1200];
    snprintf(want, sizeof want, "%s: cannot open: not a regular file but a FIFO (named pipe); "
             "give a safetensors file", path);
    expect_refused(path, want, NULL);
    expect_refused("/dev/zero", "/dev/zero: cannot open: not a regular file but a character "
                   "device", NULL);
    unlink(path);
}

Test(safetensors, refuses_bad_header_length)
{
    uint8_t b[18] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    write_bytes(work_path("hlen"), b, sizeof b);
    expect_refused(work_path("hlen"), "header length of 100 bytes",
                   "only 10 bytes after them (truncated");
    uint8_t huge[16] = {0x00, 0xc2, 0xeb, 0x0b, 0, 0, 0, 0, '{', '}'}; /* 200,000,000 */
    write_bytes(work_path("hhuge"), huge, sizeof huge);
    expect_refused(work_path("hhuge"), "header length of 200000000 bytes", "100000000");
    uint8_t neg[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    write_bytes(work_path("hneg"), neg, sizeof neg);
    expect_refused(work_path("hneg"), "header length of 18446744073709551615", NULL);
}

Test(safetensors, refuses_bad_json)
{
    expect_refused(make_file("notjson", "{\"a\": ", NULL, 0),
                   "header (bytes 8..14) is not valid JSON",
                   "at file byte");
    expect_refused(make_file("array", "[1, 2]", NULL, 0), "must be a JSON object, found an array",
                   NULL);
    expect_refused(make_file("dup",
                             "{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
                             "\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
                             "abcd", 4),
                   "duplicate object key", NULL);
    const char bad_utf8[] = "{\"\xff\xfe\":{}}";
    expect_refused(make_file("utf8", bad_utf8, NULL, 0), "not valid JSON", NULL);
    expect_refused(make_file("trailing", "{} x", NULL, 0), "not valid JSON", NULL);
}

Test(safetensors, refuses_bad_entries)
{
    expect_entry_refused("[1]", 0, "tensor t: the entry must be an object", "found an array");
    expect_entry_refused("{\"shape\":[1],\"data_offsets\":[0,4]}", 4, "tensor t: missing \"dtype\"",
                         NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"data_offsets\":[0,4]}", 4,
                         "tensor t: missing \"shape\"", NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[1]}", 4,
                         "tensor t: missing \"data_offsets\"", NULL);
    expect_entry_refused("{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}", 4,
                         "\"dtype\" must be a string, found an integer", NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":\"1\",\"data_offsets\":[0,4]}", 4,
                         "\"shape\" must be an array of integers, found a string", NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}", 4,
                         "shape[0] must be an integer >= 0, found a real number", NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{\"a\":0}}", 4,
                         "\"data_offsets\" must be an array of integers, found an object", NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}", 8,
                         "\"data_offsets\" must be [begin, end], found 3 numbers", NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,4]}", 4,
                         "data_offsets[0] must be an integer >= 0, found a negative integer", NULL);
}

Test(safetensors, refuses_unknown_dtype)
{
    expect_entry_refused("{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}", 4,
                         "tensor t: unknown dtype \"F33\"", "tern reads F32, BF16 and F16");
}

Test(safetensors, refuses_bad_shapes)
{
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[2,-3],\"data_offsets\":[0,4]}", 4,
                         "shape[1] must be an integer >= 0, found a negative integer", NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],"
                         "\"data_offsets\":[0,4]}", 4,
                         "shape [4294967296, 4294967296, 16] has more elements than can exist",
                         NULL);
    /* fits in size_t as elements, overflows as bytes */
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[4611686018427387904],"
                         "\"data_offsets\":[0,4]}", 4, "more elements than can exist", NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}",
                         4, "shape has 9 dimensions; tern accepts up to 8", NULL);
    expect_entry_refused("{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]}", 1,
                         "3 elements of F4 (4 bits) are not a whole number of bytes", NULL);
}

Test(safetensors, refuses_bad_offsets)
{
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}", 8,
                         "tensor t: data_offsets [8, 4] end before they begin", NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}", 8,
                         "tensor t: data ends at byte 16 but the file has only 8 data bytes "
                         "(truncated file?)", NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}", 8,
                         "tensor t: data_offsets [0, 8] hold 8 bytes but dtype F32 with shape [3] "
                         "needs 12", NULL);
    expect_entry_refused("{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[0,16]}", 16,
                         "hold 16 bytes but dtype BF16 with shape [2, 2] needs 8", NULL);
    expect_entry_refused("{\"dtype\":\"F32\",\"shape\":[1],"
                         "\"data_offsets\":[0,9223372036854775807]}",
                         4, "data ends at byte 9223372036854775807", NULL);
}

Test(safetensors, refuses_overlapping_tensors)
{
    uint8_t zeros[16] = {0};
    const char *path = make_file("overlap",
                                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                 "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                                 zeros, sizeof zeros);
    expect_refused(path, "tensors a (data bytes 0..8) and b (data bytes 4..12) overlap", NULL);
    /* the same bytes twice, listed in reverse */
    path = make_file("overlap2",
                     "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                     "\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}",
                     zeros, sizeof zeros);
    expect_refused(path, "overlap", NULL);
    /* touching is fine, and empty tensors occupy nothing */
    path = make_file("touch",
                     "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                     "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,8]},"
                     "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                     zeros, sizeof zeros);
    st_file f;
    char err[1024] = "";
    cr_assert_eq(st_open(path, &f, err, sizeof err), 0, "%s", err);
    st_close(&f);
}

Test(safetensors, refuses_long_names_and_bad_metadata)
{
    char header[1024], name[301];
    memset(name, 'n', 300);
    name[300] = '\0';
    snprintf(header, sizeof header,
             "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", name);
    expect_refused(make_file("longname", header, "abcd", 4), "is 300 bytes long",
                   "up to 255");
    expect_refused(make_file("meta1", "{\"__metadata__\": [1]}", NULL, 0),
                   "\"__metadata__\" must be an object of strings, found an array", NULL);
    expect_refused(make_file("meta2", "{\"__metadata__\": {\"format\": \"pt\", \"n\": 3}}",
                             NULL, 0),
                   "\"__metadata__\" value of \"n\" must be a string, found an integer", NULL);
}

Test(safetensors, truncated_file_names_the_tensor)
{
    float a[4] = {1, 2, 3, 4}, b[3] = {5, 6, 7};
    int64_t sa[1] = {4}, sb[1] = {3};
    st_write_item items[2] = {{"first", 1, sa, a}, {"last", 1, sb, b}};
    const char *path = work_path("whole.safetensors");
    char err[1024] = "";
    cr_assert_eq(st_write_f32(path, items, 2, NULL, err, sizeof err), 0, "%s", err);
    size_t n;
    uint8_t *bytes = read_bytes(path, &n);
    const char *cut = work_path("cut.safetensors");
    write_bytes(cut, bytes, n - 1);
    free(bytes);
    expect_refused(cut, "tensor last: data ends at byte 28 but the file has only 27 data bytes "
                   "(truncated file?)", cut);
}

/* ---- writing ------------------------------------------------------------ */

Test(safetensors, failed_write_leaves_no_temp_file)
{
    float x[1] = {1};
    int64_t s[1] = {1};
    st_write_item it = {"x", 1, s, x};
    char path[1100], tmp[1200];
    snprintf(path, sizeof path, "%s/st-no-such-dir/model.safetensors", TERN_TEST_WORK_DIR);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    char err[1024] = "";
    cr_assert_eq(st_write_f32(path, &it, 1, NULL, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "cannot create"), "%s", err);
    cr_assert_not_null(strstr(err, "st-no-such-dir/model.safetensors.tmp"), "%s", err);
    cr_assert(!exists(tmp) && !exists(path));
}

Test(safetensors, write_failing_midway_keeps_the_old_file)
{
    /* a first, good version */
    float small[2] = {1, 2};
    int64_t s2[1] = {2};
    st_write_item it = {"x", 1, s2, small};
    const char *path = work_path("keep.safetensors");
    char tmp[1200], err[1024] = "";
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_assert_eq(st_write_f32(path, &it, 1, NULL, err, sizeof err), 0, "%s", err);

    /* a second one, larger than the process may write: write() fails with
     * EFBIG after the temp file was created and partly written */
    enum { BIG = 1 << 16 };
    float *big = calloc(BIG, sizeof *big);
    int64_t sb[1] = {BIG};
    st_write_item it2 = {"x", 1, sb, big};
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {4096, 4096};
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    cr_assert_eq(st_write_f32(path, &it2, 1, NULL, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "cannot write"), "%s", err);
    cr_assert(!exists(tmp), "the temp file remains after a failed write");
    free(big);

    st_file f;
    cr_assert_eq(st_open(path, &f, err, sizeof err), 0, "%s", err);
    float got[2];
    cr_assert_eq(st_to_f32(st_find(&f, "x"), got, 2, err, sizeof err), 0, "%s", err);
    cr_assert_eq(got[1], 2.0f);
    st_close(&f);
}

Test(safetensors, writer_refusals)
{
    float x[2] = {1, 2};
    int64_t s[1] = {2}, neg[1] = {-1};
    const char *path = work_path("refused.safetensors");
    char tmp[1200], err[1024] = "";
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    st_write_item dup[2] = {{"x", 1, s, x}, {"x", 1, s, x}};
    cr_assert_eq(st_write_f32(path, dup, 2, NULL, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "tensor x: the name appears twice"), "%s", err);
    st_write_item bad = {"y", 1, neg, x};
    cr_assert_eq(st_write_f32(path, &bad, 1, NULL, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "shape[0] = -1"), "%s", err);
    st_write_item meta = {"__metadata__", 1, s, x};
    cr_assert_eq(st_write_f32(path, &meta, 1, NULL, err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "not __metadata__"), "%s", err);
    st_write_item ok = {"x", 1, s, x};
    cr_assert_eq(st_write_f32(path, &ok, 1, "{\"a\": ", err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "metadata is not valid JSON"), "%s", err);
    cr_assert_eq(st_write_f32(path, &ok, 1, "{\"a\": 1}", err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "metadata value of \"a\" must be a string"), "%s", err);
    cr_assert_eq(st_write_f32(path, &ok, 1, "[]", err, sizeof err), -1);
    cr_assert_not_null(strstr(err, "must be a JSON object"), "%s", err);
    cr_assert(!exists(tmp) && !exists(path));
}
