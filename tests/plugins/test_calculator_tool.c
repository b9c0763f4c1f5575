/* test_calculator_tool.c: the `calculator` tool through its ops table
 * (harness.h): it loads as a thread-safe tool, describes itself as a JSON
 * function schema, and answers exactly: big integers, Python's precedence,
 * decimals and fractions as value_text.h writes them; each failure
 * (division by zero, an inexact power, a result too large, nesting too deep,
 * too long) is TERN_TOOL_FAILED and each mistake of the model's (a syntax
 * error with its column, arguments that are not {"expression": "..."}) is
 * TERN_TOOL_INVALID, with the exact line it reads; output cut to the
 * buffer, never inside a character; concurrent calls on one instance. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "tern/tool.h"

/* The output buffer of a call, as the core sizes it (output_max + 1). */
#define OUTPUT_CAP (TERN_TOOL_OUTPUT_MAX + 1)

static harness h;
static const tern_tool_ops *ops;

static void open_calc(const char *settings)
{
    int rc = harness_open(&h, "calculator", TERN_KIND_TOOL, settings);
    cr_assert_eq(rc, TERN_OK, "harness_open: %s", h.error);
    ops = harness_ops(&h);
}

static void setup(void) { open_calc(""); }
static void teardown(void) { harness_close(&h); }

/* Call the tool with `arguments` (JSON text) into buf[0..cap). */
static tern_tool_result call_args(const char *arguments, char *buf, size_t cap)
{
    tern_tool_call c = {.size = sizeof c, .name = "calculator", .arguments = arguments, .seed = 7};
    tern_tool_result r;
    memset(&r, 0, sizeof r);
    r.size = sizeof r;
    r.output = buf;
    r.output_cap = cap;
    cr_assert_eq(ops->call(h.state, &c, &r), TERN_OK, "call(%s)", arguments);
    if (cap > 0) {
        cr_assert_eq(buf[r.output_len], '\0', "NUL-terminated");
        cr_assert_eq(strlen(buf), r.output_len);
    }
    return r;
}

/* {"expression": expr} (expr has no quote or backslash) with status and
 * output as expected. */
static void expect(const char *expr, uint32_t status, const char *output)
{
    static char buf[OUTPUT_CAP];
    char *args = NULL;
    cr_assert_gt(asprintf(&args, "{\"expression\": \"%s\"}", expr), 0);
    tern_tool_result r = call_args(args, buf, sizeof buf);
    free(args);
    cr_expect_eq(r.status, status, "%s: status %u, want %u (%s)", expr, r.status, status, buf);
    cr_expect_str_eq(buf, output, "%s", expr);
    cr_expect_eq(r.truncated, 0, "%s", expr);
}

static void ok(const char *expr, const char *output) { expect(expr, TERN_TOOL_OK, output); }

/* expr repeated n times between before and after. */
static char *repeat(const char *before, const char *part, int n, const char *after)
{
    size_t len = strlen(before) + strlen(part) * (size_t)n + strlen(after) + 1;
    char *s = malloc(len);
    cr_assert_not_null(s);
    strcpy(s, before);
    for (int i = 0; i < n; i++)
        strcat(s, part);
    strcat(s, after);
    return s;
}

TestSuite(calculator, .init = setup, .fini = teardown);

Test(calculator, loads_as_a_thread_safe_tool)
{
    const tern_plugin_descriptor *d = h.entry->plugin->desc;
    cr_expect_str_eq(d->name, "calculator");
    cr_expect_eq(d->kind, TERN_KIND_TOOL);
    cr_expect(d->caps & TERN_CAP_THREAD_SAFE);
}

Test(calculator, describes_a_function_schema)
{
    const char *schema = NULL;
    cr_assert_eq(ops->describe(h.state, &schema), TERN_OK);
    cr_assert_not_null(schema);
    json_error_t err;
    json_t *j = json_loads(schema, 0, &err);
    cr_assert_not_null(j, "describe() is JSON: %s (%s)", err.text, schema);
    cr_expect_str_eq(json_string_value(json_object_get(j, "type")), "function");
    json_t *f = json_object_get(j, "function");
    cr_expect_str_eq(json_string_value(json_object_get(f, "name")), "calculator");
    cr_expect(json_is_string(json_object_get(f, "description")));
    json_t *params = json_object_get(f, "parameters");
    cr_expect_str_eq(json_string_value(json_object_get(params, "type")), "object");
    json_t *expr = json_object_get(json_object_get(params, "properties"), "expression");
    cr_expect_str_eq(json_string_value(json_object_get(expr, "type")), "string");
    json_t *required = json_object_get(params, "required");
    cr_expect_eq(json_array_size(required), 1);
    cr_expect_str_eq(json_string_value(json_array_get(required, 0)), "expression");
    json_decref(j);
}

Test(calculator, integers_exactly)
{
    ok("123*456", "56088");
    ok("123 * 456", "56088");
    ok("99999999999999999999*99999999999999999999",
       "9999999999999999999800000000000000000001");
    ok("2**100", "1267650600228229401496703205376");
    ok("3 - 10", "-7");
    ok("0", "0");
    ok("-0", "0");
    ok("\\t 1 +\\n 2 ", "3"); /* JSON escapes: a tab and a newline */
}

Test(calculator, precedence_and_associativity)
{
    ok("2+3*4", "14");
    ok("(1+2)*3", "9");
    ok("2**3**2", "512");
    ok("2^3^2", "512");
    ok("(2**3)**2", "64");
    ok("-2**2", "-4");
    ok("(-2)**2", "4");
    ok("2**-1", "0.5");
    ok("10-4-3", "3");
    ok("64/4/2", "8");
    ok("--3", "3");
    ok("-+-3", "3");
    ok("2*-3", "-6");
    ok("7//2", "3");
    ok("7//-2", "-4");
    ok("-7%3", "2");
    ok("7%-3", "-2");
    ok("7.5%2", "1.5");
    ok("0**0", "1");
}

Test(calculator, decimals_exactly)
{
    ok("0.1+0.2", "0.3");
    ok("7/2", "3.5");
    ok("1/8", "0.125");
    ok("-1/8", "-0.125");
    ok("1.5e3", "1500");
    ok("2e-3", "0.002");
    ok(".5 + 1.", "1.5");
    ok("1.10", "1.1");
    ok("1/1024", "0.0009765625");
    ok("0.1*3 - 0.3", "0");
}

Test(calculator, fractions_with_an_approximation)
{
    ok("1/3", "1/3 ~ 0.333333333333");
    ok("2/3", "2/3 ~ 0.666666666667");
    ok("-1/3", "-1/3 ~ -0.333333333333");
    ok("1/7", "1/7 ~ 0.142857142857");
    ok("1000000/3", "1000000/3 ~ 333333.333333");
    ok("1/3000", "1/3000 ~ 0.000333333333333");
    ok("1/30000", "1/30000 ~ 3.33333333333e-05");
    ok("10**20/3", "100000000000000000000/3 ~ 3.33333333333e+19");
    ok("1 - 1/(3*10**13)", "29999999999999/30000000000000 ~ 1"); /* rounded up to 1 */
    ok("1/3*3", "1");
}

Test(calculator, digits_setting)
{
    harness_close(&h);
    open_calc("digits = 4;");
    ok("1/3", "1/3 ~ 0.3333");
    ok("20000/3", "20000/3 ~ 6667");
    ok("200000/3", "200000/3 ~ 6.667e+04");
    harness_close(&h);
    cr_expect_neq(harness_open(&h, "calculator", TERN_KIND_TOOL, "digits = 0;"), TERN_OK,
                  "digits >= 1");
}

Test(calculator, failures)
{
    expect("1/0", TERN_TOOL_FAILED, "division by zero (the \"/\" at column 2)");
    expect("1/(2-2)", TERN_TOOL_FAILED, "division by zero (the \"/\" at column 2)");
    expect("5 // 0", TERN_TOOL_FAILED, "division by zero (the \"//\" at column 3)");
    expect("5 % 0", TERN_TOOL_FAILED, "division by zero (the \"%\" at column 3)");
    expect("0**-1", TERN_TOOL_FAILED,
           "division by zero: 0 to a negative power (the \"**\" at column 2)");
    expect("2 ** 0.5", TERN_TOOL_FAILED,
           "not exact: the exponent of \"**\" at column 3 is not a whole number, and this "
           "calculator gives only exact results");
    expect("2^(1/3)", TERN_TOOL_FAILED,
           "not exact: the exponent of \"^\" at column 2 is not a whole number, and this "
           "calculator gives only exact results");
    expect("2**10001", TERN_TOOL_FAILED,
           "too large: the exponent of \"**\" at column 2 is 10001, past the limit of 10000");
    expect("(2**10000)**105", TERN_TOOL_FAILED,
           "too large: the result of \"**\" at column 11 would have about 1050210 bits; the "
           "limit is 1048576 bits (about 315652 digits)");
    expect("1e10001", TERN_TOOL_FAILED,
           "too large: the number at column 1 has an exponent past the limit of 10000");
}

Test(calculator, a_tower_of_powers_fails_fast)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect("9**9**9", TERN_TOOL_FAILED,
           "too large: the exponent of \"**\" at column 2 is 387420489, past the limit of 10000");
    expect("9**9**9**9", TERN_TOOL_FAILED,
           "too large: the exponent of \"**\" at column 5 is 387420489, past the limit of 10000");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_expect_lt(s, 2.0, "refused before computing: %.3f s", s);
}

Test(calculator, deep_nesting_fails_without_a_crash)
{
    static const char want[] = "too deeply nested at column 101: more than 100 levels of "
                               "parentheses, signs or powers";
    char *parens = repeat("", "(", 1000, "1");
    char *closed = repeat(parens, ")", 1000, "");
    expect(closed, TERN_TOOL_FAILED, want);
    char *signs = repeat("", "-", 3000, "1");
    expect(signs, TERN_TOOL_FAILED, want);
    char *powers = repeat("", "1**", 1300, "1");
    expect(powers, TERN_TOOL_FAILED, "too deeply nested at column 302: more than 100 levels of "
                                     "parentheses, signs or powers");
    /* at the limit it still answers */
    char *deepest = repeat("", "(", 100, "1");
    char *deepest_closed = repeat(deepest, ")", 100, "");
    ok(deepest_closed, "1");
    free(parens);
    free(closed);
    free(signs);
    free(powers);
    free(deepest);
    free(deepest_closed);
}

Test(calculator, too_long_fails)
{
    char *sum = repeat("", "1+", 2100, "1"); /* 4201 bytes */
    expect(sum, TERN_TOOL_FAILED, "the expression is 4201 bytes long, past the limit of 4096; "
                                  "split it into smaller calculations");
    free(sum);
}

Test(calculator, syntax_errors_say_where)
{
    expect("2 + * 3", TERN_TOOL_INVALID,
           "syntax error at column 5: expected a number or \"(\", found \"*\"");
    expect("2+", TERN_TOOL_INVALID,
           "syntax error at column 3: expected a number or \"(\", found the end");
    expect("(1+2", TERN_TOOL_INVALID,
           "syntax error at column 5: expected \")\" to close the \"(\" at column 1, found the "
           "end");
    expect("1+2)", TERN_TOOL_INVALID, "syntax error at column 4: \")\" has no \"(\" to close");
    expect("2 = 2", TERN_TOOL_INVALID,
           "syntax error at column 3: expected an operator or the end, found \"=\"");
    expect("1,000 + 1", TERN_TOOL_INVALID,
           "syntax error at column 2: \",\" is not allowed; write numbers without separators "
           "(1000, not 1,000)");
    expect("sqrt(2)", TERN_TOOL_INVALID,
           "syntax error at column 1: \"sqrt\" is not a number or an operator; only numbers, "
           "+ - * / // % ** ^ and parentheses are allowed");
    /* columns count characters: "×" is two bytes */
    expect("3 × 4", TERN_TOOL_INVALID,
           "syntax error at column 3: expected an operator or the end, found \"×\"");
    expect("\\u0001", TERN_TOOL_INVALID,
           "syntax error at column 1: expected a number or \"(\", found the byte 0x01");
    expect("", TERN_TOOL_INVALID, "the expression is empty; give one such as \"123 * 456\"");
    expect("   ", TERN_TOOL_INVALID, "the expression is empty; give one such as \"123 * 456\"");
}

Test(calculator, arguments_must_be_an_expression_string)
{
    static char buf[OUTPUT_CAP];
    static const char need[] = "the arguments need \"expression\", a string such as \"123 * 456\"";
    tern_tool_result r = call_args("{}", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect_str_eq(buf, need);
    r = call_args("[\"1+1\"]", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect_str_eq(buf, need);
    r = call_args("{\"expression\": 42}", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect_str_eq(buf, "\"expression\" must be a string such as \"123 * 456\", not a number");
    r = call_args("{\"expression\": null}", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect_str_eq(buf, "\"expression\" must be a string such as \"123 * 456\", not null");
    r = call_args("{\"expression\": \"1+1\", \"precision\": 3}", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect_str_eq(buf, "unknown argument \"precision\"; the calculator takes only "
                          "\"expression\"");
    r = call_args("{\"expression\": \"1+1\"} and more", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect(strncmp(buf, "the arguments are not a JSON object (", 37) == 0, "%s", buf);
    r = call_args("1+1", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect(strncmp(buf, "the arguments are not a JSON object (", 37) == 0, "%s", buf);
    /* what the model wrote is quoted back as ASCII only: the output stays UTF-8 */
    r = call_args("{\"\u00e9\": 1}", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect_str_eq(buf, "unknown argument \"??\"; the calculator takes only \"expression\"");
    r = call_args("{\"expression\": \xff\xfe}", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    for (size_t i = 0; i < r.output_len; i++)
        cr_expect_lt((unsigned char)buf[i], 0x80, "byte %zu of %s", i, buf);
    r = call_args("{\"expression\": \"1\", \"expression\": \"2\"}", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_INVALID, "a duplicate key is ambiguous: %s", buf);
    r = call_args("{\"expression\": \"6*7\"}", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_OK);
    cr_expect_str_eq(buf, "42");
}

Test(calculator, output_is_cut_to_the_buffer)
{
    char buf[4];
    memset(buf, 'x', sizeof buf);
    tern_tool_result r = call_args("{\"expression\": \"123*456\"}", buf, sizeof buf);
    cr_expect_eq(r.status, TERN_TOOL_OK);
    cr_expect_eq(r.truncated, 1);
    cr_expect_leq(r.output_len, 3);
    cr_expect_str_eq(buf, "560");
    /* fits exactly: not truncated */
    char six[6];
    r = call_args("{\"expression\": \"123*456\"}", six, sizeof six);
    cr_expect_eq(r.truncated, 0);
    cr_expect_str_eq(six, "56088");
    /* never inside a character: "×" (0xC3 0x97) is dropped whole */
    static const char msg[] = "syntax error at column 3: expected an operator or the end, found \"";
    char cut[sizeof msg + 1]; /* room for the message's bytes before "×" and one more */
    r = call_args("{\"expression\": \"3 × 4\"}", cut, sizeof cut);
    cr_expect_eq(r.status, TERN_TOOL_INVALID);
    cr_expect_eq(r.truncated, 1);
    cr_expect_str_eq(cut, msg);
    /* a result past the largest output a slot may have */
    static char big[OUTPUT_CAP];
    r = call_args("{\"expression\": \"(7**10000)**10\"}", big, sizeof big);
    cr_expect_eq(r.status, TERN_TOOL_OK);
    cr_expect_eq(r.truncated, 1, "84510 digits do not fit in %zu bytes", sizeof big);
    cr_expect_eq(r.output_len, sizeof big - 1);
    cr_expect_eq(strncmp(big, "636797", 6), 0, "7^100000 starts 636797...: %.10s", big);
}

/* One thread's share of the concurrent calls: n sums, each checked. */
static void *sums(void *arg)
{
    long base = (long)arg;
    char buf[128], args[96], want[64];
    for (long i = 0; i < 200; i++) {
        snprintf(args, sizeof args, "{\"expression\": \"%ld*%ld + 1/2\"}", base, i);
        snprintf(want, sizeof want, "%ld.5", base * i);
        tern_tool_call c = {.size = sizeof c, .name = "calculator", .arguments = args};
        tern_tool_result r = {.size = sizeof r, .output = buf, .output_cap = sizeof buf};
        if (ops->call(h.state, &c, &r) != TERN_OK || r.status != TERN_TOOL_OK ||
            strcmp(buf, want) != 0)
            return (void *)1;
    }
    return NULL;
}

Test(calculator, concurrent_calls_on_one_instance)
{
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, sums, (void *)(1000 + i)), 0);
    for (int i = 0; i < 4; i++) {
        void *bad = NULL;
        pthread_join(t[i], &bad);
        cr_expect_null(bad, "thread %d got a wrong answer", i);
    }
}
