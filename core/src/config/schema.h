/* schema.h: checks a config group against tern_setting_spec arrays (the
 * core's sections and each plugin's declared settings use the same engine),
 * and fills in defaults so the resolved config shows every value in force. */
#ifndef TERN_SCHEMA_H
#define TERN_SCHEMA_H

#include <stddef.h>

#include "config/config.h"
#include "config/diag.h"
#include "tern/settings.h"

/* tern_schema_check flags */
#define TERN_SCHEMA_ALLOW_UNKNOWN 0x1u /* do not report keys outside the specs */

/* Check `group` (a GROUP setting; the root for the top level) against the
 * union of the keys in specs[0..nspecs). Every problem is added to `d` as one
 * "WHERE: message" line: unknown keys (with the nearest valid name), wrong
 * types (an integer widens to a float, nothing else converts), values out of
 * range or outside the choices, missing required keys. Absent keys with a
 * default are added with that default, except a TERN_SETTING_IN_RUN_DIR key
 * (the run fills it in, host/session.h). Returns the number of problems. */
size_t tern_schema_check(tern_config *c, config_setting_t *group,
                         const tern_setting_spec *const *specs, size_t nspecs, unsigned flags,
                         tern_diag *d);

/* The element after `s` in a spec array (steps by s->size). */
const tern_setting_spec *tern_spec_next(const tern_setting_spec *s);
/* The entry named `name` (one path segment), or NULL. */
const tern_setting_spec *tern_spec_find(const tern_setting_spec *spec, const char *name);
/* The entry for a dotted path ("init.preset", "cases.0.name"), or NULL. */
const tern_setting_spec *tern_spec_find_path(const tern_setting_spec *spec, const char *path);

/* The bare file name a TERN_SETTING_IN_RUN_DIR spec's default gives, into
 * name (size n): TERN_OK, or TERN_EINVAL when `s` is not such a spec. */
int tern_spec_run_file_name(const tern_setting_spec *s, char *name, size_t n);

/* Check that a plugin's spec array is well formed: element sizes, names,
 * types, defaults that parse as their type, ranges. On failure returns
 * TERN_EINVAL with tern_error_message() saying which entry and why. */
int tern_spec_validate(const tern_setting_spec *spec);

#endif
