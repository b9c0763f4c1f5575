/* test_config.c: reading configs, overrides, and the schema checks every
 * section goes through (unknown keys with suggestions, types, ranges,
 * choices, required keys, defaults), with FILE:LINE in every message. */
#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "config/config.h"
#include "config/config_diff.h"
#include "config/core_schema.h"
#include "config/schema.h"
#include "config/suggest.h"

static const tern_setting_spec inner_keys[] = {
    TERN_SETTING(.name = "depth", .type = TERN_SETTING_INT, .def = "2", .min = 1, .max = 8),
    TERN_SETTINGS_END,
};
static const tern_setting_spec case_keys[] = {
    TERN_SETTING(.name = "name", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_REQUIRED),
    TERN_SETTING(.name = "weight", .type = TERN_SETTING_FLOAT, .def = "1.0", .min = 0, .max = 10),
    TERN_SETTINGS_END,
};
static const tern_setting_spec trainer_keys[] = {
    TERN_SETTING(.name = "lr", .type = TERN_SETTING_FLOAT, .def = "0.0003", .min = 0, .max = 1,
                 .aka = "learning_rate"),
    TERN_SETTING(.name = "steps", .type = TERN_SETTING_INT, .flags = TERN_SETTING_REQUIRED,
                 .min = 1, .max = 1000000, .doc = "how many steps"),
    TERN_SETTING(.name = "mode", .type = TERN_SETTING_STRING, .def = "\"fast\"",
                 .choices = "fast|careful"),
    TERN_SETTING(.name = "verbose", .type = TERN_SETTING_BOOL, .def = "false"),
    TERN_SETTING(.name = "inner", .type = TERN_SETTING_GROUP, .children = inner_keys),
    TERN_SETTING(.name = "cases", .type = TERN_SETTING_LIST, .children = case_keys),
    TERN_SETTING(.name = "tags", .type = TERN_SETTING_STRINGS),
    TERN_SETTINGS_END,
};
static const tern_setting_spec top_keys[] = {
    TERN_SETTING(.name = "trainer", .type = TERN_SETTING_GROUP, .children = trainer_keys,
                 .flags = TERN_SETTING_REQUIRED),
    TERN_SETTINGS_END,
};

/* Write `text` to a file (so messages carry its name), read and check it. */
typedef struct checked {
    tern_config cfg;
    tern_diag d;
    char path[256];
    int read_rc;
} checked;

static void check_text(checked *k, const char *text, const char *const *overrides, size_t n)
{
    static int counter;
    snprintf(k->path, sizeof k->path, "%s/cfg_%d_%d.cfg", TERN_TEST_WORK_DIR, (int)getpid(),
             counter++);
    FILE *f = fopen(k->path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    tern_diag_init(&k->d);
    k->read_rc = tern_config_read_file(&k->cfg, k->path, &k->d);
    if (k->read_rc != TERN_OK)
        return;
    for (size_t i = 0; i < n; i++)
        tern_config_override(&k->cfg, overrides[i], &k->d);
    const tern_setting_spec *specs = top_keys;
    tern_schema_check(&k->cfg, config_root_setting(&k->cfg.cfg), &specs, 1, 0, &k->d);
}

static void release(checked *k)
{
    if (k->read_rc == TERN_OK)
        tern_config_free(&k->cfg);
    tern_diag_free(&k->d);
    remove(k->path);
}

/* Exactly one message, equal to "PATH:LINE: rest". */
static void expect_one(checked *k, int line, const char *rest)
{
    char want[1024];
    if (line > 0)
        snprintf(want, sizeof want, "%s:%d: %s", k->path, line, rest);
    else
        snprintf(want, sizeof want, "%s", rest);
    cr_assert_eq(k->d.n, 1, "expected 1 message, got %zu (first: %s)", k->d.n,
                 k->d.n ? k->d.msgs[0] : "-");
    cr_expect_str_eq(k->d.msgs[0], want);
}

Test(config, valid_file_gets_defaults_filled)
{
    checked k;
    check_text(&k, "trainer = { steps = 10; };\n", NULL, 0);
    cr_assert_eq(k.d.n, 0, "%s", k.d.n ? k.d.msgs[0] : "");
    double lr = 0;
    cr_expect(config_lookup_float(&k.cfg.cfg, "trainer.lr", &lr));
    cr_expect_float_eq(lr, 3e-4, 1e-12);
    const char *mode = NULL;
    cr_expect(config_lookup_string(&k.cfg.cfg, "trainer.mode", &mode));
    cr_expect_str_eq(mode, "fast");
    int depth = 0;
    cr_expect(config_lookup_int(&k.cfg.cfg, "trainer.inner.depth", &depth),
              "absent group with defaults is created");
    cr_expect_eq(depth, 2);
    release(&k);
}

Test(config, unknown_key_suggests_through_aka)
{
    checked k;
    check_text(&k, "trainer = {\n  steps = 10;\n  lerning_rate = 0.1;\n};\n", NULL, 0);
    expect_one(&k, 3, "unknown key 'lerning_rate' in trainer (did you mean 'lr'?)");
    release(&k);
}

Test(config, unknown_key_suggests_nearest_name)
{
    checked k;
    check_text(&k, "trainer = { steps = 10; verbos = true; };\n", NULL, 0);
    expect_one(&k, 1, "unknown key 'verbos' in trainer (did you mean 'verbose'?)");
    release(&k);
}

Test(config, unknown_key_without_near_name_lists_valid_keys)
{
    checked k;
    check_text(&k, "trainer = { steps = 10; zzzzzz = 1; };\n", NULL, 0);
    cr_assert_eq(k.d.n, 1);
    cr_expect(strstr(k.d.msgs[0], "unknown key 'zzzzzz' in trainer (valid keys: lr, steps, mode"),
              "%s", k.d.msgs[0]);
    release(&k);
}

Test(config, unknown_section)
{
    checked k;
    check_text(&k, "trainer = { steps = 1; };\ntrainr = { lr = 1.0; };\n", NULL, 0);
    expect_one(&k, 2, "unknown section 'trainr' (did you mean 'trainer'?)");
    release(&k);
}

Test(config, integers_widen_to_floats)
{
    checked k;
    check_text(&k, "trainer = { steps = 10; lr = 1; };\n", NULL, 0);
    cr_expect_eq(k.d.n, 0, "%s", k.d.n ? k.d.msgs[0] : "");
    release(&k);
}

Test(config, floats_do_not_narrow_to_integers)
{
    checked k;
    check_text(&k, "trainer = { steps = 10.0; };\n", NULL, 0);
    expect_one(&k, 1, "trainer.steps: expected an integer, found a float (10)");
    release(&k);
}

Test(config, strings_do_not_convert)
{
    checked k;
    check_text(&k, "trainer = { steps = \"10\"; };\n", NULL, 0);
    expect_one(&k, 1, "trainer.steps: expected an integer, found a string (\"10\")");
    release(&k);
}

Test(config, out_of_range)
{
    checked k;
    check_text(&k, "trainer = {\n steps = 0;\n lr = 2.5; };\n", NULL, 0);
    cr_assert_eq(k.d.n, 2);
    char want[512];
    snprintf(want, sizeof want, "%s:2: trainer.steps: 0 is out of range [1, 1000000]", k.path);
    cr_expect_str_eq(k.d.msgs[0], want);
    snprintf(want, sizeof want, "%s:3: trainer.lr: 2.5 is out of range [0, 1]", k.path);
    cr_expect_str_eq(k.d.msgs[1], want);
    release(&k);
}

Test(config, choices_with_suggestion)
{
    checked k;
    check_text(&k, "trainer = { steps = 1; mode = \"carefull\"; };\n", NULL, 0);
    expect_one(&k, 1, "trainer.mode: 'carefull' is not one of fast|careful (did you mean "
                      "'careful'?)");
    release(&k);
}

Test(config, missing_required_key_and_section)
{
    checked k;
    check_text(&k, "trainer = {\n  lr = 0.1;\n};\n", NULL, 0);
    expect_one(&k, 1, "trainer: missing required key 'steps' (how many steps)");
    release(&k);
    check_text(&k, "# nothing\n", NULL, 0);
    cr_assert_eq(k.d.n, 1);
    cr_expect(strstr(k.d.msgs[0], "missing required section 'trainer'"), "%s", k.d.msgs[0]);
    release(&k);
}

Test(config, list_of_groups_checked_per_element)
{
    checked k;
    check_text(&k,
               "trainer = { steps = 1;\n"
               "  cases = ( { name = \"a\"; },\n"
               "            { weight = 20.0; } ); };\n",
               NULL, 0);
    cr_assert_eq(k.d.n, 2, "%zu: %s", k.d.n, k.d.n ? k.d.msgs[0] : "");
    cr_expect(strstr(k.d.msgs[0], "trainer.cases[1].weight: 20 is out of range"), "%s",
              k.d.msgs[0]);
    cr_expect(strstr(k.d.msgs[1], "trainer.cases[1]: missing required key 'name'"), "%s",
              k.d.msgs[1]);
    double w = 0;
    config_setting_t *c0 = config_lookup(&k.cfg.cfg, "trainer.cases.[0].weight");
    cr_assert_not_null(c0, "default filled in list element");
    w = config_setting_get_float(c0);
    cr_expect_float_eq(w, 1.0, 1e-12);
    release(&k);
}

Test(config, list_of_strings)
{
    checked k;
    check_text(&k, "trainer = { steps = 1; tags = [\"a\", \"b\"]; };\n", NULL, 0);
    cr_expect_eq(k.d.n, 0);
    release(&k);
    check_text(&k, "trainer = { steps = 1; tags = [1, 2]; };\n", NULL, 0);
    cr_assert_eq(k.d.n, 1);
    cr_expect(strstr(k.d.msgs[0], "trainer.tags: expected a list of strings"), "%s", k.d.msgs[0]);
    release(&k);
}

Test(config, all_problems_reported_at_once)
{
    checked k;
    check_text(&k, "trainer = { steps = 0; mode = \"x\"; foo = 1; verbose = 3; };\n", NULL, 0);
    cr_expect_eq(k.d.n, 4);
    release(&k);
}

Test(config, missing_file_is_named)
{
    tern_config c;
    tern_diag d;
    tern_diag_init(&d);
    cr_assert_eq(tern_config_read_file(&c, "/nonexistent/tern.cfg", &d), TERN_ECONFIG);
    cr_assert_eq(d.n, 1);
    cr_expect_str_eq(d.msgs[0],
                     "/nonexistent/tern.cfg: cannot read config file: No such file or directory");
    tern_diag_free(&d);
}

Test(config, syntax_error_names_file_and_line)
{
    checked k;
    check_text(&k, "trainer = {\n  steps = 1;\n  lr = ;\n};\n", NULL, 0);
    cr_assert_eq(k.read_rc, TERN_ECONFIG);
    cr_assert_eq(k.d.n, 1);
    char want[300];
    snprintf(want, sizeof want, "%s:3: ", k.path);
    cr_expect(strncmp(k.d.msgs[0], want, strlen(want)) == 0, "%s", k.d.msgs[0]);
    release(&k);
}

Test(overrides, typed_like_the_file)
{
    checked k;
    const char *o[] = {"trainer.steps=5", "trainer.lr=1", "trainer.mode=careful",
                       "trainer.verbose=true", "trainer.tags=[\"x\"]"};
    check_text(&k, "trainer = { steps = 1; };\n", o, 5);
    cr_assert_eq(k.d.n, 0, "%s", k.d.n ? k.d.msgs[0] : "");
    int steps = 0, verbose = 0;
    double lr = 0;
    const char *mode = NULL;
    cr_expect(config_lookup_int(&k.cfg.cfg, "trainer.steps", &steps));
    cr_expect_eq(steps, 5);
    cr_expect(config_lookup_int(&k.cfg.cfg, "trainer.lr", &(int){0}), "lr=1 stays an integer");
    cr_expect(config_lookup_float(&k.cfg.cfg, "trainer.lr", &lr) || 1);
    cr_expect(config_lookup_string(&k.cfg.cfg, "trainer.mode", &mode), "bare word is a string");
    cr_expect_str_eq(mode, "careful");
    cr_expect(config_lookup_bool(&k.cfg.cfg, "trainer.verbose", &verbose));
    cr_expect_eq(verbose, 1);
    release(&k);
}

Test(overrides, wrong_type_cites_the_override)
{
    checked k;
    const char *o[] = {"trainer.steps=2.5"};
    check_text(&k, "trainer = { steps = 1; };\n", o, 1);
    cr_assert_eq(k.d.n, 1);
    cr_expect_str_eq(k.d.msgs[0],
                     "-o trainer.steps=2.5: trainer.steps: expected an integer, found a float "
                     "(2.5)");
    release(&k);
}

Test(overrides, creates_missing_groups_and_checks_them)
{
    checked k;
    const char *o[] = {"trainer.inner.depth=4", "trainer.inner.dpth=4"};
    check_text(&k, "trainer = { steps = 1; };\n", o, 2);
    cr_assert_eq(k.d.n, 1, "%s", k.d.n ? k.d.msgs[0] : "");
    cr_expect(strstr(k.d.msgs[0], "-o trainer.inner.dpth=4: unknown key 'dpth' in "
                                  "trainer.inner (did you mean 'depth'?)"),
              "%s", k.d.msgs[0]);
    release(&k);
}

Test(overrides, list_elements_by_index)
{
    checked k;
    const char *o[] = {"trainer.cases.0.weight=3", "trainer.cases.[1].name=\"z\""};
    check_text(&k, "trainer = { steps = 1; cases = ({ name = \"a\"; }, { name = \"b\"; }); };\n",
               o, 2);
    cr_assert_eq(k.d.n, 0, "%s", k.d.n ? k.d.msgs[0] : "");
    const char *name = NULL;
    cr_expect(config_lookup_string(&k.cfg.cfg, "trainer.cases.[1].name", &name));
    cr_expect_str_eq(name, "z");
    release(&k);
}

Test(overrides, malformed)
{
    const char *bad[] = {"nokey", "=3", "trainer.steps.x=1", "trainer.cases.7.name=\"q\""};
    const char *want[] = {"expected section.key=value", "expected section.key=value",
                          "inside a setting that is not a group", "there is no element 7"};
    for (size_t i = 0; i < 4; i++) {
        checked k;
        const char *o[] = {bad[i]};
        check_text(&k, "trainer = { steps = 1; cases = ({ name = \"a\"; }); };\n", o, 1);
        cr_assert_geq(k.d.n, 1, "%s accepted", bad[i]);
        cr_expect(strstr(k.d.msgs[0], want[i]), "%s -> %s", bad[i], k.d.msgs[0]);
        release(&k);
    }
}

Test(core_schema, is_well_formed_and_checks_sections)
{
    cr_assert_eq(tern_spec_validate(tern_core_schema), TERN_OK);
    for (size_t i = 0; i < tern_n_slots; i++)
        cr_expect_eq(tern_spec_validate(tern_slots[i].keys), TERN_OK, "%s",
                     tern_slots[i].section);
    tern_config c;
    tern_diag d;
    tern_diag_init(&d);
    cr_assert_eq(tern_config_read_string(&c, "run = { seed = -1; randm_seed = 2; };", "<s>", &d),
                 TERN_OK);
    const tern_setting_spec *core = tern_core_schema;
    tern_schema_check(&c, config_root_setting(&c.cfg), &core, 1, 0, &d);
    cr_assert_eq(d.n, 2);
    cr_expect(strstr(d.msgs[0], "run.seed: -1 is out of range"), "%s", d.msgs[0]);
    cr_expect(strstr(d.msgs[1], "unknown key 'randm_seed' in run (did you mean 'seed'?)"), "%s",
              d.msgs[1]);
    tern_config_free(&c);
    tern_diag_free(&d);
}

Test(spec, invalid_plugin_specs_are_refused)
{
    static const tern_setting_spec bad_default[] = {
        TERN_SETTING(.name = "n", .type = TERN_SETTING_INT, .def = "ten"), TERN_SETTINGS_END};
    static const tern_setting_spec bad_name[] = {
        TERN_SETTING(.name = "Bad-Name", .type = TERN_SETTING_INT), TERN_SETTINGS_END};
    static const tern_setting_spec unquoted[] = {
        TERN_SETTING(.name = "s", .type = TERN_SETTING_STRING, .def = "abc"), TERN_SETTINGS_END};
    static const tern_setting_spec required_default[] = {
        TERN_SETTING(.name = "s", .type = TERN_SETTING_INT, .def = "1",
                     .flags = TERN_SETTING_REQUIRED),
        TERN_SETTINGS_END};
    static const tern_setting_spec inverted_range[] = {
        TERN_SETTING(.name = "r", .type = TERN_SETTING_INT, .min = 1), TERN_SETTINGS_END};
    static const tern_setting_spec default_not_a_choice[] = {
        TERN_SETTING(.name = "m", .type = TERN_SETTING_STRING, .def = "\"z\"", .choices = "a|b"),
        TERN_SETTINGS_END};
    cr_expect_neq(tern_spec_validate(bad_default), TERN_OK);
    cr_expect_neq(tern_spec_validate(bad_name), TERN_OK);
    cr_expect_neq(tern_spec_validate(unquoted), TERN_OK);
    cr_expect_neq(tern_spec_validate(required_default), TERN_OK);
    cr_expect_neq(tern_spec_validate(default_not_a_choice), TERN_OK);
    cr_expect_neq(tern_spec_validate(inverted_range), TERN_OK, "min without max is a bug");
    cr_expect_eq(tern_spec_validate(trainer_keys), TERN_OK);
}

/* TERN_SETTING_IN_RUN_DIR (ABI 1.5): a top-level string whose default is a bare
 * file name; the schema leaves it absent for the run to fill in. */
Test(spec, in_run_dir_settings)
{
    static const tern_setting_spec good[] = {
        TERN_SETTING(.name = "path", .type = TERN_SETTING_STRING,
                     .flags = TERN_SETTING_IN_RUN_DIR, .def = "\"buffer.sqlite\""),
        TERN_SETTING(.name = "n", .type = TERN_SETTING_INT, .def = "4"),
        TERN_SETTINGS_END};
    static const tern_setting_spec with_slash[] = {
        TERN_SETTING(.name = "path", .type = TERN_SETTING_STRING,
                     .flags = TERN_SETTING_IN_RUN_DIR, .def = "\"sub/b.db\""),
        TERN_SETTINGS_END};
    static const tern_setting_spec dot_dot[] = {
        TERN_SETTING(.name = "path", .type = TERN_SETTING_STRING,
                     .flags = TERN_SETTING_IN_RUN_DIR, .def = "\"..\""),
        TERN_SETTINGS_END};
    static const tern_setting_spec no_default[] = {
        TERN_SETTING(.name = "path", .type = TERN_SETTING_STRING,
                     .flags = TERN_SETTING_IN_RUN_DIR),
        TERN_SETTINGS_END};
    static const tern_setting_spec not_a_string[] = {
        TERN_SETTING(.name = "n", .type = TERN_SETTING_INT, .flags = TERN_SETTING_IN_RUN_DIR,
                     .def = "3"),
        TERN_SETTINGS_END};
    static const tern_setting_spec nested_child[] = {
        TERN_SETTING(.name = "path", .type = TERN_SETTING_STRING,
                     .flags = TERN_SETTING_IN_RUN_DIR, .def = "\"x.db\""),
        TERN_SETTINGS_END};
    static const tern_setting_spec nested[] = {
        TERN_SETTING(.name = "g", .type = TERN_SETTING_GROUP, .children = nested_child),
        TERN_SETTINGS_END};
    cr_expect_eq(tern_spec_validate(good), TERN_OK, "%s", tern_error_message());
    cr_expect_neq(tern_spec_validate(with_slash), TERN_OK);
    cr_expect(strstr(tern_error_message(), "setting 'path' is TERN_SETTING_IN_RUN_DIR, which "
                                           "needs a top-level string whose default is a bare "
                                           "file name"), "%s", tern_error_message());
    cr_expect_neq(tern_spec_validate(dot_dot), TERN_OK);
    cr_expect_neq(tern_spec_validate(no_default), TERN_OK);
    cr_expect_neq(tern_spec_validate(not_a_string), TERN_OK);
    cr_expect_neq(tern_spec_validate(nested), TERN_OK);
    cr_expect(strstr(tern_error_message(), "'g.path'"), "%s", tern_error_message());
    char name[64];
    cr_expect_eq(tern_spec_run_file_name(&good[0], name, sizeof name), TERN_OK);
    cr_expect_str_eq(name, "buffer.sqlite");
    cr_expect_neq(tern_spec_run_file_name(&good[1], name, sizeof name), TERN_OK);

    /* absent: left for the run (the other default is filled); given: checked as a string */
    tern_config c;
    tern_diag d;
    tern_diag_init(&d);
    cr_assert_eq(tern_config_read_string(&c, "g = { };\nh = { path = 5; };\n", "<t>", &d),
                 TERN_OK);
    const tern_setting_spec *specs = good;
    config_setting_t *g = config_lookup(&c.cfg, "g"), *h = config_lookup(&c.cfg, "h");
    cr_expect_eq(tern_schema_check(&c, g, &specs, 1, 0, &d), 0);
    cr_expect_null(config_setting_get_member(g, "path"), "no default path outside a run");
    cr_expect_not_null(config_setting_get_member(g, "n"), "other defaults are filled");
    cr_expect_eq(tern_schema_check(&c, h, &specs, 1, 0, &d), 1);
    cr_expect(d.n == 1 && strstr(d.msgs[0], "h.path: expected a string"), "%s",
              d.n ? d.msgs[0] : "");
    tern_config_free(&c);
    tern_diag_free(&d);
}

Test(suggest, edit_distance)
{
    cr_expect_eq(tern_edit_distance("seed", "seed"), 0);
    cr_expect_eq(tern_edit_distance("sed", "seed"), 1);
    cr_expect_eq(tern_edit_distance("esed", "seed"), 1, "transposition counts once");
    cr_expect_eq(tern_edit_distance("", "abc"), 3);
    cr_expect_eq(tern_edit_distance("Seed", "seed"), 0, "case-insensitive");
}

Test(suggest, only_likely_typos_are_suggested)
{
    tern_suggest s;
    tern_suggest_init(&s, "capcity");
    tern_suggest_offer_akas(&s, "capacity", NULL);
    tern_suggest_offer_akas(&s, "policy", NULL);
    cr_expect_str_eq(tern_suggest_best(&s), "capacity");
    tern_suggest_init(&s, "xyz");
    tern_suggest_offer_akas(&s, "capacity", NULL);
    cr_expect_null(tern_suggest_best(&s));
}

/* ---- the file itself: what it is, limits, @include, integers (config_text.c) ---- */

/* A fresh directory of this test's own under the work directory. */
static const char *own_dir(void)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/cfgin_XXXXXX", TERN_TEST_WORK_DIR);
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* rm -rf dir */
static void remove_tree(const char *dir) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* DIR/NAME holding `len` bytes of `text` (subfolders made as needed);
 * returns the path (static, one of 4). */
static const char *put_in(const char *dir, const char *name, const char *text, size_t len)
{
    static char paths[4][1024];
    static int k;
    char *p = paths[k++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    for (char *s = strchr(p + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(p, 0777);
        *s = '/';
    }
    FILE *f = fopen(p, "wb");
    cr_assert_not_null(f, "%s", p);
    cr_assert_eq(fwrite(text, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
    return p;
}

static const char *put_text(const char *dir, const char *name, const char *text)
{
    return put_in(dir, name, text, strlen(text));
}

/* Read `path`, expecting a refusal with exactly one message equal to `want`
 * (a printf format whose arguments are the `dir` given, up to three times). */
static void expect_read_refused(const char *path, const char *dir, const char *want)
{
    tern_config c;
    tern_diag d;
    tern_diag_init(&d);
    cr_assert_eq(tern_config_read_file(&c, path, &d), TERN_ECONFIG, "%s was read", path);
    char w[2048];
    snprintf(w, sizeof w, want, dir, dir, dir);
    cr_assert_eq(d.n, 1, "%zu messages (first: %s)", d.n, d.n ? d.msgs[0] : "-");
    cr_expect_str_eq(d.msgs[0], w);
    tern_diag_free(&d);
}

/* "FILE:LINE" of the setting at `path` of config c. */
static const char *where_of(tern_config *c, const char *path)
{
    static char buf[1024];
    config_setting_t *s = config_lookup(&c->cfg, path);
    cr_assert_not_null(s, "no %s", path);
    return tern_config_where(c, s, buf, sizeof buf);
}

Test(config_input, fifo_device_and_directory_are_refused_without_blocking)
{
    alarm(20); /* a reader that blocks on the FIFO ends the test here */
    const char *dir = own_dir();
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/f.cfg", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    expect_read_refused(fifo, dir, "%s/f.cfg: cannot read config file: not a regular file but a "
                                   "FIFO (named pipe); give a config file");
    expect_read_refused("/dev/zero", dir, "/dev/zero: cannot read config file: not a regular "
                                          "file but a character device; give a config file");
    expect_read_refused(dir, dir, "%s: cannot read config file: Is a directory; give a config "
                                  "file");
    remove_tree(dir);
}

Test(config_input, a_long_line_and_a_big_file_are_refused)
{
    const char *dir = own_dir();
    size_t n = (1u << 20) + 100;
    char *text = malloc(n + 64);
    cr_assert_not_null(text);
    int h = snprintf(text, n + 64, "trainer = {\n  steps = 1;\n  mode = \"");
    memset(text + h, 'x', n);
    strcpy(text + h + n, "\";\n};\n");
    const char *path = put_text(dir, "long.cfg", text);
    free(text);
    expect_read_refused(path, dir, "%s/long.cfg:3: the line is longer than 1048576 bytes (1 MiB); "
                                   "break it up (strings may continue on the next line: \"ab\" "
                                   "\"cd\" reads as \"abcd\")");
    path = put_text(dir, "big.cfg", "");
    cr_assert_eq(truncate(path, (16 << 20) + 1), 0);
    expect_read_refused(path, dir, "%s/big.cfg: cannot read config file: too big: 16777217 "
                                   "bytes, over the limit of 16777216 (16 MiB); is it a config "
                                   "file?");
    const char *nul = put_in(dir, "nul.cfg", "a = 1;\nb = 2;\0c = 3;\n", 21);
    expect_read_refused(nul, dir, "%s/nul.cfg:2: a NUL byte at column 7; a config file is "
                                  "text: remove it");
    remove_tree(dir);
}

Test(config_input, a_long_string_reads_in_linear_time)
{
    /* libconfig reading a FILE * rescans a token each time its buffer
     * refills: 8 MB of one string took about a minute; from memory it is
     * well under a second (the guard leaves room for sanitizers) */
    alarm(20);
    const char *dir = own_dir();
    size_t lines = 8000, width = 1000;
    char *text = malloc(lines * (width + 1) + 64);
    cr_assert_not_null(text);
    size_t at = (size_t)sprintf(text, "trainer = { steps = 1; mode = \"");
    for (size_t i = 0; i < lines; i++) {
        memset(text + at, 'y', width);
        at += width;
        text[at++] = '\n';
    }
    strcpy(text + at, "\"; };\n");
    const char *path = put_text(dir, "string.cfg", text);
    free(text);
    tern_config c;
    tern_diag d;
    tern_diag_init(&d);
    cr_assert_eq(tern_config_read_file(&c, path, &d), TERN_OK, "%s", d.n ? d.msgs[0] : "");
    const char *mode = NULL;
    cr_assert(config_lookup_string(&c.cfg, "trainer.mode", &mode));
    cr_expect_eq(strlen(mode), lines * (width + 1));
    tern_config_free(&c);
    tern_diag_free(&d);
    remove_tree(dir);
}

Test(config_input, includes_are_taken_from_the_including_files_folder)
{
    const char *dir = own_dir();
    put_text(dir, "parts/a.cfg", "# a\n@include \"b.cfg\"   # from parts/\nfrom_a = 2;\n");
    put_text(dir, "parts/b.cfg", "from_b = 3;"); /* no final newline */
    put_text(dir, "abs.cfg", "from_abs = 4;\n");
    char main_text[1024];
    snprintf(main_text, sizeof main_text,
             "trainer = {\n  steps = 1;\n};\n@include \"parts/a.cfg\"\nafter = 1;\n"
             "  @include \"%s/abs.cfg\"\nlast = 5;\n", dir);
    const char *path = put_text(dir, "main.cfg", main_text);
    tern_config c;
    tern_diag d;
    tern_diag_init(&d);
    /* the working directory is not dir: "parts/a.cfg" is found from main.cfg's folder */
    cr_assert_eq(tern_config_read_file(&c, path, &d), TERN_OK, "%s", d.n ? d.msgs[0] : "");
    char want[1024];
    snprintf(want, sizeof want, "%s/main.cfg:2", dir);
    cr_expect_str_eq(where_of(&c, "trainer.steps"), want);
    snprintf(want, sizeof want, "%s/parts/b.cfg:1", dir);
    cr_expect_str_eq(where_of(&c, "from_b"), want);
    snprintf(want, sizeof want, "%s/parts/a.cfg:3", dir);
    cr_expect_str_eq(where_of(&c, "from_a"), want);
    snprintf(want, sizeof want, "%s/main.cfg:5", dir);
    cr_expect_str_eq(where_of(&c, "after"), want);
    snprintf(want, sizeof want, "%s/abs.cfg:1", dir);
    cr_expect_str_eq(where_of(&c, "from_abs"), want);
    snprintf(want, sizeof want, "%s/main.cfg:7", dir);
    cr_expect_str_eq(where_of(&c, "last"), want);
    int v = 0;
    cr_expect(config_lookup_int(&c.cfg, "from_b", &v) && v == 3);
    tern_config_free(&c);
    tern_diag_free(&d);
    remove_tree(dir);
}

Test(config_input, a_failing_include_is_named_with_file_and_line)
{
    alarm(20); /* the FIFO include must not block */
    const char *dir = own_dir();
    put_text(dir, "parts/x.cfg", "x = 1;\n");
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/parts/f.cfg", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    const char *path = put_text(dir, "m1.cfg", "a = 1;\n@include \"nope.cfg\"\n");
    expect_read_refused(path, dir, "%s/m1.cfg:2: cannot include \"nope.cfg\" (%s/nope.cfg): No "
                                   "such file or directory; an @include is taken from the folder "
                                   "of the file that holds it");
    /* libconfig itself ends the process on a directory ("input in flex scanner failed") */
    path = put_text(dir, "m2.cfg", "a = 1;\n\n@include \"parts\"\n");
    expect_read_refused(path, dir, "%s/m2.cfg:3: cannot include \"parts\" (%s/parts): Is a "
                                   "directory; include a config file");
    path = put_text(dir, "m3.cfg", "@include \"parts/f.cfg\"\n");
    expect_read_refused(path, dir, "%s/m3.cfg:1: cannot include \"parts/f.cfg\" (%s/parts/f.cfg): "
                                   "not a regular file but a FIFO (named pipe); include a config "
                                   "file");
    put_text(dir, "parts/self.cfg", "@include \"self.cfg\"\n");
    path = put_text(dir, "m4.cfg", "@include \"parts/self.cfg\"\n");
    expect_read_refused(path, dir, "%s/parts/self.cfg:1: @include \"self.cfg\": includes nest "
                                   "more than 10 deep; does a file include itself?");
    put_text(dir, "parts/bad.cfg", "good = 1;\nbad = ;\n");
    path = put_text(dir, "m5.cfg", "a = 1;\n@include \"parts/bad.cfg\"\n");
    expect_read_refused(path, dir, "%s/parts/bad.cfg:2: syntax error");
    put_text(dir, "parts/open.cfg", "s = \"abc\n");
    path = put_text(dir, "m6.cfg", "@include \"parts/open.cfg\"\n\";\n");
    expect_read_refused(path, dir, "%s/parts/open.cfg:1: the file ends inside the string begun "
                                   "on this line; close it");
    path = put_text(dir, "m7.cfg", "@include \"parts/x.cfg\" @include \"parts/x.cfg\"\n");
    expect_read_refused(path, dir, "%s/m7.cfg:1: a second @include on one line; give each a line "
                                   "of its own");
    remove_tree(dir);
}

Test(config_input, includes_in_strings_and_comments_are_text)
{
    const char *dir = own_dir();
    const char *path = put_text(dir, "m.cfg",
                                "/*\n@include \"nope.cfg\"\n*/\ns = \"a\n@include \\\"x\\\"\n\";\n"
                                "# @include \"nope.cfg\"\n");
    tern_config c;
    tern_diag d;
    tern_diag_init(&d);
    cr_assert_eq(tern_config_read_file(&c, path, &d), TERN_OK, "%s", d.n ? d.msgs[0] : "");
    const char *s = NULL;
    cr_assert(config_lookup_string(&c.cfg, "s", &s));
    cr_expect_str_eq(s, "a\n@include \"x\"\n");
    tern_config_free(&c);
    tern_diag_free(&d);
    remove_tree(dir);
}

Test(config_input, integers_past_32_bits_are_kept_and_past_64_refused)
{
    const char *dir = own_dir();
    const char *path = put_text(dir, "ints.cfg",
                                "a = 4294967296;\nb = -5000000000;\nc = 0x100000000;\nd = 7;\n"
                                "e = 5L;\nf = 1.5e10;\nname-12345678901 = 8;\n"
                                "s = \"99999999999999999999999\"; # 99999999999999999999999\n"
                                "l = [ 3000000000, 4000000000 ];\n");
    tern_config c;
    tern_diag d;
    tern_diag_init(&d);
    cr_assert_eq(tern_config_read_file(&c, path, &d), TERN_OK, "%s", d.n ? d.msgs[0] : "");
    long long v = 0;
    cr_expect(config_lookup_int64(&c.cfg, "a", &v) && v == 4294967296LL, "a = %lld", v);
    cr_expect(config_lookup_int64(&c.cfg, "b", &v) && v == -5000000000LL, "b = %lld", v);
    cr_expect(config_lookup_int64(&c.cfg, "c", &v) && v == 4294967296LL, "c = %lld", v);
    cr_expect_eq(config_setting_type(config_lookup(&c.cfg, "d")), CONFIG_TYPE_INT,
                 "a small integer stays an int");
    cr_expect(config_lookup_int64(&c.cfg, "e", &v) && v == 5);
    double f = 0;
    cr_expect(config_lookup_float(&c.cfg, "f", &f) && f == 1.5e10);
    int i = 0;
    cr_expect(config_lookup_int(&c.cfg, "name-12345678901", &i) && i == 8);
    const char *s = NULL;
    cr_expect(config_lookup_string(&c.cfg, "s", &s) && strcmp(s, "99999999999999999999999") == 0);
    cr_expect_eq(config_setting_get_int64_elem(config_lookup(&c.cfg, "l"), 0), 3000000000LL);
    tern_config_free(&c);
    tern_diag_free(&d);

    path = put_text(dir, "big.cfg", "x = 1;\ny = 99999999999999999999999;\n");
    expect_read_refused(path, dir, "%s/big.cfg:2: 99999999999999999999999 is out of range for an "
                                   "integer: give one from -9223372036854775808 to "
                                   "9223372036854775807");
    path = put_text(dir, "big64.cfg", "y = -99999999999999999999999L;\n");
    expect_read_refused(path, dir, "%s/big64.cfg:1: -99999999999999999999999L is out of range "
                                   "for an integer: give one from -9223372036854775808 to "
                                   "9223372036854775807");
    remove_tree(dir);
}

Test(overrides, integers_past_64_bits_and_empty_names_are_refused)
{
    checked k;
    const char *o[] = {"trainer.steps=99999999999999999999999"};
    check_text(&k, "trainer = { steps = 1; };\n", o, 1);
    expect_one(&k, 0, "-o trainer.steps=99999999999999999999999: 99999999999999999999999 is out "
                      "of range for an integer: give one from -9223372036854775808 to "
                      "9223372036854775807");
    release(&k);

    /* past 32 bits: kept whole (libconfig alone reads 5000000000 as 705032704) */
    const char *o2[] = {"trainer.steps=5000000000"};
    check_text(&k, "trainer = { steps = 1; };\n", o2, 1);
    expect_one(&k, 0, "-o trainer.steps=5000000000: trainer.steps: 5000000000 is out of range "
                      "[1, 1000000]");
    release(&k);

    /* a bare word that merely holds a big number is still a string */
    const char *o3[] = {"trainer.tags=[\"a\"]", "trainer.mode=fast 99999999999999999999999 x"};
    check_text(&k, "trainer = { steps = 1; };\n", o3, 2);
    expect_one(&k, 0, "-o trainer.mode=fast 99999999999999999999999 x: trainer.mode: 'fast "
                      "99999999999999999999999 x' is not one of fast|careful");
    release(&k);

    /* the core's seed, 0 to 2^53: one past it is out of range, as given and in full */
    tern_config c;
    tern_diag d;
    tern_diag_init(&d);
    cr_assert_eq(tern_config_read_string(&c, "run = { seed = 1; };", "<s>", &d), TERN_OK);
    cr_assert_eq(tern_config_override(&c, "run.seed=9007199254740993", &d), TERN_OK);
    const tern_setting_spec *core = tern_core_schema;
    tern_schema_check(&c, config_root_setting(&c.cfg), &core, 1, 0, &d);
    cr_assert_eq(d.n, 1);
    cr_expect_str_eq(d.msgs[0], "-o run.seed=9007199254740993: run.seed: 9007199254740993 is out "
                                "of range [0, 9007199254740992]");
    tern_config_free(&c);
    tern_diag_free(&d);

    const char *empty[] = {".=1", "trainer..steps=1", "trainer.steps.=1", ".trainer=1"};
    for (size_t i = 0; i < 4; i++) {
        const char *oe[] = {empty[i]};
        check_text(&k, "trainer = { steps = 1; };\n", oe, 1);
        char want[256], path[64];
        snprintf(path, sizeof path, "%.*s", (int)(strchr(empty[i], '=') - empty[i]), empty[i]);
        snprintf(want, sizeof want, "-o %s: the key path '%s' has an empty name; give "
                 "section.key=value (e.g. -o run.seed=2)", empty[i], path);
        cr_assert_geq(k.d.n, 1, "%s accepted", empty[i]);
        cr_expect_str_eq(k.d.msgs[0], want);
        release(&k);
    }
}

/* Two texts' first difference (config_diff.c), as a rank and the master
 * compare their resolved configs. */
static int first_difference(const char *a_text, const char *b_text, char *path, char *va,
                            char *vb)
{
    config_t a, b;
    config_init(&a);
    config_init(&b);
    cr_assert_eq(config_read_string(&a, a_text), CONFIG_TRUE, "%s", a_text);
    cr_assert_eq(config_read_string(&b, b_text), CONFIG_TRUE, "%s", b_text);
    int d = tern_config_first_difference(&a, &b, path, 256, va, vb, 160);
    config_destroy(&a);
    config_destroy(&b);
    return d;
}

Test(config_diff, the_first_differing_setting_is_named_with_both_values)
{
    char path[256], va[160], vb[160];
    cr_expect_eq(first_difference("a = { x = 1; y = \"s\"; }; l = (1, 2);",
                                  "l = (1, 2); a = { y = \"s\"; x = 1L; };", path, va, vb),
                 0, "the same settings in another order, an int and an int64 alike");
    cr_expect_eq(first_difference("a = { x = 1; };", "a = { x = 2; };", path, va, vb), 1);
    cr_expect_str_eq(path, "a.x");
    cr_expect_str_eq(va, "1");
    cr_expect_str_eq(vb, "2");
    cr_expect_eq(first_difference("a = { x = 1; };", "a = { x = 1; z = 0.5; };", path, va, vb),
                 1);
    cr_expect_str_eq(path, "a.z");
    cr_expect_str_eq(va, "(none)");
    cr_expect_str_eq(vb, "0.5");
    cr_expect_eq(first_difference("r = ( { w = 1.0; } );", "r = ( { w = 3e-4; } );", path, va,
                                  vb),
                 1);
    cr_expect_str_eq(path, "r.[0].w");
    cr_expect_str_eq(vb, "0.0003");
    cr_expect_eq(first_difference("l = [1, 2];", "l = [1, 2, 3];", path, va, vb), 1);
    cr_expect_str_eq(path, "l");
    cr_expect_str_eq(va, "a list of 2");
    cr_expect_eq(first_difference("s = \"a\";", "s = 1;", path, va, vb), 1);
    cr_expect_str_eq(va, "\"a\"");
    cr_expect_eq(first_difference("b = true;", "b = false;", path, va, vb), 1);
    cr_expect_str_eq(vb, "false");
}
