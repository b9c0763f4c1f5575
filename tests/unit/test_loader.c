/* test_loader.c: every refusal of the plugin loader (docs/architecture.md §3), each
 * against a purpose-built bad plugin, and the search-path rules. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "host/host_table.h"
#include "host/loader.h"
#include "host/registry.h"

#define BAD TERN_TEST_BAD_PLUGIN_DIR

/* Scan only `dir` (and whatever TERN_PLUGIN_PATH adds: cleared here). */
static void scan(tern_registry *r, const char *dir)
{
    unsetenv("TERN_PLUGIN_PATH");
    cr_assert_eq(tern_registry_init(r, &dir, 1), TERN_OK);
    cr_assert_eq(tern_registry_scan(r, tern_host_table()), TERN_OK);
}

/* The refusal recorded for the file at `path`. */
static const char *refusal_of(const tern_registry *r, const char *path)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->entries[i].path, path) == 0)
            return r->entries[i].refusal;
    cr_assert_fail("no entry for %s", path);
    return NULL;
}

/* Open one file directly and check its refusal names it, the reason, the fix. */
static void expect_refused(const char *file, const char *reason, const char *fix)
{
    tern_plugin *p = NULL;
    char *name = NULL;
    uint32_t kind = 0;
    int rc = tern_plugin_open(file, tern_host_table(), &p, &name, &kind);
    cr_assert_neq(rc, TERN_OK, "%s was accepted", file);
    cr_assert_null(p);
    const char *msg = tern_error_message();
    cr_expect(strncmp(msg, file, strlen(file)) == 0, "message does not start with the file: %s",
              msg);
    cr_expect(strstr(msg, reason) != NULL, "reason '%s' missing from: %s", reason, msg);
    cr_expect(strstr(msg, fix) != NULL, "fix '%s' missing from: %s", fix, msg);
    cr_expect(strchr(msg, '\n') == NULL, "refusal is not one line: %s", msg);
    free(name);
}

Test(loader, accepts_a_valid_plugin)
{
    tern_plugin *p = NULL;
    char *name = NULL;
    uint32_t kind = 0;
    int rc = tern_plugin_open(BAD "/good/good_buffer.so", tern_host_table(), &p, &name, &kind);
    cr_assert_eq(rc, TERN_OK, "%s", tern_error_message());
    cr_expect_str_eq(p->desc->name, "good_buffer");
    cr_expect_eq(p->desc->kind, TERN_KIND_BUFFER);
    tern_plugin_close(p);
}

Test(loader, refuses_other_abi_major)
{
    expect_refused(BAD "/abi_major/abi_major.so", "built for ABI major 2", "rebuild the plugin");
}

/* A run checks model, reward and sync instances before its directory exists,
 * so only a buffer may keep a file there (TERN_SETTING_IN_RUN_DIR, ABI 1.5). */
Test(loader, refuses_a_run_directory_file_on_a_plugin_that_is_not_a_buffer)
{
    expect_refused(BAD "/run_dir_kind/run_dir_kind.so",
                   "declares setting 'file' TERN_SETTING_IN_RUN_DIR, which only buffer plugins "
                   "may use", "give it a default of its own");
}

Test(loader, refuses_newer_abi_minor)
{
    expect_refused(BAD "/abi_minor/abi_minor.so", "built for ABI 1.99, newer than",
                   "upgrade tern or rebuild");
}

Test(loader, refuses_too_small_descriptor)
{
    expect_refused(BAD "/small_descriptor/small_descriptor.so", "descriptor size 24",
                   "sizeof(tern_plugin_descriptor)");
}

Test(loader, refuses_too_small_ops_table)
{
    expect_refused(BAD "/small_ops/small_ops.so", "ops table size 16 is smaller",
                   "sizeof(tern_buffer_ops)");
}

Test(loader, refuses_missing_required_op)
{
    expect_refused(BAD "/missing_op/missing_op.so", "lacks the required op 'get'",
                   "implement it");
}

Test(loader, refuses_missing_entry_symbol)
{
    expect_refused(BAD "/no_entry/no_entry.so", "no 'tern_plugin_entry' symbol",
                   "TERN_PLUGIN_EXPORT");
}

Test(loader, refuses_file_that_is_not_loadable)
{
    expect_refused(BAD "/not_loadable/garbage.so", "not a loadable shared object",
                   "remove it from the plugin path");
}

Test(loader, refuses_missing_dependency)
{
    expect_refused(BAD "/missing_dep/missing_dep.so",
                   "a library it depends on is missing (libtern_test_gone.so",
                   "LD_LIBRARY_PATH");
}

Test(loader, refuses_unresolved_symbol)
{
    expect_refused(BAD "/unresolved/unresolved.so", "tern_test_symbol_nobody_defines",
                   "link the plugin against the library");
}

Test(loader, refusal_keeps_the_name_when_descriptor_was_readable)
{
    tern_plugin *p = NULL;
    char *name = NULL;
    uint32_t kind = 0;
    tern_plugin_open(BAD "/missing_op/missing_op.so", tern_host_table(), &p, &name, &kind);
    cr_assert_not_null(name);
    cr_expect_str_eq(name, "missing_op");
    cr_expect_eq(kind, TERN_KIND_BUFFER);
    free(name);
}

Test(registry, wrong_kind_for_the_slot)
{
    tern_registry r;
    scan(&r, BAD "/wrong_kind");
    const tern_registry_entry *e = NULL;
    int rc = tern_registry_resolve(&r, "wrong_kind", TERN_KIND_BUFFER, "buffer", &e);
    cr_assert_neq(rc, TERN_OK);
    const char *msg = tern_error_message();
    cr_expect(strstr(msg, BAD "/wrong_kind/wrong_kind.so") != NULL, "%s", msg);
    cr_expect(strstr(msg, "'wrong_kind' is a sync plugin, but buffer needs a buffer plugin"),
              "%s", msg);
    tern_registry_free(&r);
}

Test(registry, duplicate_name_first_wins)
{
    unsetenv("TERN_PLUGIN_PATH");
    const char *dirs[] = {BAD "/dup_first", BAD "/dup_second"};
    tern_registry r;
    cr_assert_eq(tern_registry_init(&r, dirs, 2), TERN_OK);
    cr_assert_eq(tern_registry_scan(&r, tern_host_table()), TERN_OK);
    const tern_registry_entry *e = NULL;
    cr_assert_eq(tern_registry_resolve(&r, "dup", TERN_KIND_BUFFER, "buffer", &e), TERN_OK);
    cr_expect_str_eq(e->path, BAD "/dup_first/dup.so");
    const char *msg = refusal_of(&r, BAD "/dup_second/dup.so");
    cr_assert_not_null(msg);
    cr_expect(strstr(msg, "duplicate buffer plugin name 'dup'"), "%s", msg);
    cr_expect(strstr(msg, BAD "/dup_first/dup.so"), "the winner is not named: %s", msg);
    tern_registry_free(&r);
}

Test(registry, not_found_suggests_nearest_name)
{
    tern_registry r;
    scan(&r, BAD "/good");
    const tern_registry_entry *e = NULL;
    int rc = tern_registry_resolve(&r, "good_bufer", TERN_KIND_BUFFER, "buffer", &e);
    cr_assert_eq(rc, TERN_ENOTFOUND);
    cr_expect(strstr(tern_error_message(), "did you mean 'good_buffer'?"), "%s",
              tern_error_message());
    tern_registry_free(&r);
}

Test(registry, a_refused_plugin_asked_for_by_name_reports_its_refusal)
{
    tern_registry r;
    scan(&r, BAD "/missing_op");
    const tern_registry_entry *e = NULL;
    int rc = tern_registry_resolve(&r, "missing_op", TERN_KIND_BUFFER, "buffer", &e);
    cr_assert_neq(rc, TERN_OK);
    cr_expect(strstr(tern_error_message(), "lacks the required op 'get'"), "%s",
              tern_error_message());
    tern_registry_free(&r);
}

Test(registry, search_order_config_then_environment_then_user)
{
    setenv("TERN_PLUGIN_PATH", BAD "/dup_second:" BAD "/good", 1);
    setenv("XDG_DATA_HOME", "/tmp/tern-xdg", 1);
    const char *first = BAD "/dup_first";
    tern_registry r;
    cr_assert_eq(tern_registry_init(&r, &first, 1), TERN_OK);
    cr_assert_geq(r.n_dirs, 3);
    cr_expect_str_eq(r.dirs[0], BAD "/dup_first");
    cr_expect_str_eq(r.dirs[1], BAD "/dup_second");
    cr_expect_str_eq(r.dirs[2], BAD "/good");
    cr_assert_geq(r.n_dirs, 4);
    cr_expect_str_eq(r.dirs[3], "/tmp/tern-xdg/tern/plugins/abi-1");
    tern_registry_free(&r);
    unsetenv("TERN_PLUGIN_PATH");
}

Test(registry, user_dir_follows_xdg_rules)
{
    char buf[512];
    setenv("XDG_DATA_HOME", "/srv/data", 1);
    cr_expect_str_eq(tern_registry_user_dir(buf, sizeof buf), "/srv/data/tern/plugins/abi-1");
    setenv("XDG_DATA_HOME", "relative/ignored", 1);
    setenv("HOME", "/home/ann", 1);
    cr_expect_str_eq(tern_registry_user_dir(buf, sizeof buf),
                     "/home/ann/.local/share/tern/plugins/abi-1");
    unsetenv("XDG_DATA_HOME");
    unsetenv("HOME");
    cr_expect_null(tern_registry_user_dir(buf, sizeof buf));
}

Test(registry, in_tree_plugins_are_all_accepted)
{
    tern_registry r;
    scan(&r, TERN_TEST_PLUGIN_DIR);
    size_t accepted = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (strncmp(r.entries[i].path, TERN_TEST_PLUGIN_DIR, strlen(TERN_TEST_PLUGIN_DIR)) != 0)
            continue;
        cr_expect_null(r.entries[i].refusal, "%s", r.entries[i].refusal);
        accepted += r.entries[i].plugin != NULL;
    }
    cr_expect_geq(accepted, 1);
    const tern_registry_entry *e = NULL;
    cr_expect_eq(tern_registry_resolve(&r, "synchronous", TERN_KIND_SYNC, "sync", &e), TERN_OK);
    tern_registry_free(&r);
}
