/* test_config.c: reading configs, overrides, and the schema checks every
 * section goes through (unknown keys with suggestions, types, ranges,
 * choices, required keys, defaults), with FILE:LINE in every message. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
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
