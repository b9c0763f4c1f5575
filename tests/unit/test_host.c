/* test_host.c: the services plugins reach through the host table: typed
 * settings getters, setting_error with FILE:LINE, metrics, trace spans,
 * seeds, task fields, the error channel. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "base/errmsg.h"
#include "host/host_table.h"
#include "rundir/metrics.h"
#include "config/schema.h"
#include "data/task.h"
#include "rundir/trace.h"

static const tern_setting_spec keys[] = {
    TERN_SETTING(.name = "n", .type = TERN_SETTING_INT, .def = "3"),
    TERN_SETTING(.name = "x", .type = TERN_SETTING_FLOAT, .def = "0.5"),
    TERN_SETTING(.name = "on", .type = TERN_SETTING_BOOL, .def = "true"),
    TERN_SETTING(.name = "s", .type = TERN_SETTING_STRING, .def = "\"hi\""),
    TERN_SETTING(.name = "opt", .type = TERN_SETTING_STRING),
    TERN_SETTING(.name = "tags", .type = TERN_SETTING_STRINGS),
    TERN_SETTINGS_END,
};

typedef struct fixture {
    tern_config cfg;
    tern_ctx *ctx;
} fixture;

static void open_ctx(fixture *f, const char *group_text, uint64_t seed, tern_metrics *m,
                     tern_trace *t)
{
    char text[512];
    snprintf(text, sizeof text, "slot = {\n%s\n};\n", group_text);
    tern_diag d;
    tern_diag_init(&d);
    cr_assert_eq(tern_config_read_string(&f->cfg, text, "t.cfg", &d), TERN_OK);
    config_setting_t *g = config_lookup(&f->cfg.cfg, "slot");
    const tern_setting_spec *s = keys;
    cr_assert_eq(tern_schema_check(&f->cfg, g, &s, 1, 0, &d), 0, "%s", d.n ? d.msgs[0] : "");
    tern_diag_free(&d);
    f->ctx = tern_ctx_new("slot", &f->cfg, g, keys, seed, m, t);
    cr_assert_not_null(f->ctx);
}

static void close_ctx(fixture *f)
{
    tern_ctx_free(f->ctx);
    tern_config_free(&f->cfg);
}

Test(host, table_is_versioned)
{
    const tern_host *h = tern_host_table();
    cr_expect_eq(h->size, sizeof(tern_host));
    cr_expect_eq(h->abi_major, TERN_ABI_MAJOR);
    cr_expect(TERN_HAS(h, free));
}

Test(host, typed_getters_read_values_and_defaults)
{
    fixture f;
    open_ctx(&f, "n = 7;\ntags = [\"a\", \"b\"];", 1, NULL, NULL);
    const tern_host *h = tern_host_table();
    int64_t n = 0;
    double x = 0;
    int on = 0;
    const char *s = NULL;
    size_t count = 0;
    cr_expect_eq(h->get_int(f.ctx, "n", &n), TERN_OK);
    cr_expect_eq(n, 7);
    cr_expect_eq(h->get_float(f.ctx, "x", &x), TERN_OK);
    cr_expect_float_eq(x, 0.5, 1e-12);
    cr_expect_eq(h->get_float(f.ctx, "n", &x), TERN_OK, "an integer widens");
    cr_expect_float_eq(x, 7.0, 1e-12);
    cr_expect_eq(h->get_bool(f.ctx, "on", &on), TERN_OK);
    cr_expect_eq(on, 1);
    cr_expect_eq(h->get_string(f.ctx, "s", &s), TERN_OK);
    cr_expect_str_eq(s, "hi");
    cr_expect_eq(h->get_count(f.ctx, "tags", &count), TERN_OK);
    cr_expect_eq(count, 2);
    cr_expect_eq(h->get_string(f.ctx, "opt", &s), TERN_ENOTFOUND, "absent optional key");
    cr_expect_eq(h->get_int(f.ctx, "undeclared", &n), TERN_ENOTFOUND);
    cr_expect(strstr(tern_error_message(), "does not declare"), "%s", tern_error_message());
    cr_expect_eq(h->get_int(f.ctx, "s", &n), TERN_EINVAL, "wrong type");
    close_ctx(&f);
}

Test(host, setting_error_cites_file_and_line)
{
    fixture f;
    open_ctx(&f, "n = 7;", 1, NULL, NULL);
    int rc = tern_host_table()->setting_error(f.ctx, "n", "must be even, not %d", 7);
    cr_expect_eq(rc, TERN_ECONFIG);
    cr_expect_str_eq(tern_error_message(), "t.cfg:2: slot.n: must be even, not 7");
    close_ctx(&f);
}

Test(host, fail_sets_the_message_and_returns_the_status)
{
    cr_expect_eq(tern_host_table()->fail(NULL, TERN_EIO, "disk %s", "full"), TERN_EIO);
    cr_expect_str_eq(tern_error_message(), "disk full");
}

Test(host, seeds_depend_on_run_seed_instance_and_stream)
{
    fixture a, b;
    open_ctx(&a, "", 1, NULL, NULL);
    open_ctx(&b, "", 2, NULL, NULL);
    const tern_host *h = tern_host_table();
    uint64_t s1 = h->rng_seed(a.ctx, "sampling");
    cr_expect_eq(s1, h->rng_seed(a.ctx, "sampling"), "deterministic");
    cr_expect_neq(s1, h->rng_seed(a.ctx, "dropout"), "streams differ");
    cr_expect_neq(s1, h->rng_seed(b.ctx, "sampling"), "run seeds differ");
    close_ctx(&a);
    close_ctx(&b);
}

Test(host, metrics_are_averaged_per_step_and_prefixed)
{
    tern_metrics *m = tern_metrics_new();
    fixture f;
    open_ctx(&f, "", 1, m, NULL);
    const tern_host *h = tern_host_table();
    h->metric(f.ctx, "dropped", 1);
    h->metric(f.ctx, "dropped", 3);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    cr_assert_eq(tern_metrics_write_step(m, out, 5), TERN_OK);
    cr_assert_eq(tern_metrics_write_step(m, out, 6), TERN_OK);
    fclose(out);
    cr_expect_str_eq(buf, "{\"step\":5,\"slot.dropped\":2.0,\"slot.dropped.count\":2}\n"
                          "{\"step\":6}\n");
    free(buf);
    close_ctx(&f);
    tern_metrics_free(m);
}

Test(host, trace_spans_land_in_a_valid_chrome_trace)
{
    tern_trace *t = tern_trace_new();
    fixture f;
    open_ctx(&f, "", 1, NULL, t);
    const tern_host *h = tern_host_table();
    tern_trace_name_lane(t, "trainer");
    uint64_t tok = h->span_begin(f.ctx, "train");
    h->span_end(f.ctx, tok, "{\"step\":0}");
    tok = h->span_begin(f.ctx, "bad");
    h->span_end(f.ctx, tok, "not json");
    tern_trace_instant(t, "publish", "{\"version\":1}");
    cr_expect_eq(tern_trace_count(t), 3);
    char path[512];
    snprintf(path, sizeof path, "%s/trace_%d.json", TERN_TEST_WORK_DIR, (int)getpid());
    cr_assert_eq(tern_trace_write(t, path), TERN_OK);
    FILE *fp = fopen(path, "r");
    char text[8192] = {0};
    fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    remove(path);
    cr_expect(strstr(text, "\"name\": \"thread_name\""), "%s", text);
    cr_expect(strstr(text, "\"name\": \"train\", \"ph\": \"X\""), "%s", text);
    cr_expect(strstr(text, "\"args\": {\"step\": 0}"), "%s", text);
    cr_expect(strstr(text, "\"invalid_args\": \"not json\""), "%s", text);
    cr_expect(strstr(text, "\"name\": \"publish\", \"ph\": \"i\""), "%s", text);
    close_ctx(&f);
    tern_trace_free(t);
}

Test(task, fields_by_dotted_path)
{
    tern_task *t = NULL;
    const char *line = "{\"id\": \"a1\", \"answer\": \"42\", \"n\": 3.5, "
                       "\"meta\": {\"level\": 2, \"tags\": [\"x\"]}}";
    cr_assert_eq(tern_task_parse(line, strlen(line), "tasks.jsonl:1", &t), TERN_OK);
    const tern_host *h = tern_host_table();
    cr_expect_str_eq(h->task_string(t, "answer"), "42");
    cr_expect_null(h->task_string(t, "n"), "not a string");
    cr_expect_null(h->task_string(t, "missing"));
    double v = 0;
    cr_expect_eq(h->task_number(t, "meta.level", &v), TERN_OK);
    cr_expect_float_eq(v, 2.0, 1e-12);
    cr_expect_eq(h->task_number(t, "answer", &v), TERN_EINVAL);
    cr_expect_eq(h->task_number(t, "nope", &v), TERN_ENOTFOUND);
    char *j = h->task_json(t, "meta.tags");
    cr_expect_str_eq(j, "[\"x\"]");
    h->free(j);
    tern_task_free(t);
}

Test(task, malformed_lines_are_named)
{
    tern_task *t = NULL;
    cr_expect_eq(tern_task_parse("{\"a\": ", 6, "tasks.jsonl:7", &t), TERN_EINVAL);
    cr_expect(strncmp(tern_error_message(), "tasks.jsonl:7: malformed JSON", 29) == 0, "%s",
              tern_error_message());
    cr_expect_eq(tern_task_parse("[1]", 3, "tasks.jsonl:8", &t), TERN_EINVAL);
    cr_expect_str_eq(tern_error_message(), "tasks.jsonl:8: a task must be a JSON object {...}");
    cr_expect_eq(tern_task_parse("{\"a\":1,\"a\":2}", 13, "x:1", &t), TERN_EINVAL,
                 "duplicate keys are refused");
    cr_expect_null(t);
}
