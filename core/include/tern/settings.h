/*
 * tern/settings.h: how a plugin declares the settings of its config group.
 *
 * A plugin lists its keys in an array of tern_setting_spec (descriptor.settings).
 * Before the plugin's create() runs, the core checks the plugin's group in the
 * config file against that list, with the same engine that checks the core's
 * own sections: unknown keys (with the nearest valid name), wrong types, values
 * out of range or outside `choices`, and missing required keys are reported with
 * FILE:LINE. Defaults are filled in, so the resolved config.cfg of a run shows
 * every value in force, and the plugin reads its settings with the typed getters
 * of tern_host (host.h) knowing they are present and valid.
 *
 * Type rules (the same for every section, documented in docs/config.md):
 *   - an integer literal is accepted where a float is wanted (`lr = 1` is 1.0);
 *   - a float literal is never accepted where an integer is wanted;
 *   - strings, booleans, groups and lists never convert.
 */
#ifndef TERN_SETTINGS_H
#define TERN_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The type of a setting's value. */
typedef enum tern_setting_type {
    TERN_SETTING_INT = 1,    /* 64-bit integer (libconfig int or int64: 5, 5L) */
    TERN_SETTING_FLOAT = 2,  /* double; an integer literal widens */
    TERN_SETTING_BOOL = 3,   /* true / false */
    TERN_SETTING_STRING = 4, /* "text" */
    TERN_SETTING_GROUP = 5,  /* { key = value; ... }; keys in `children` */
    TERN_SETTING_LIST = 6,   /* ( { ... }, { ... } ): a list of groups, each with `children` keys */
    TERN_SETTING_STRINGS = 7 /* [ "a", "b" ] or ( "a", "b" ): strings */
} tern_setting_type;

/* tern_setting_spec.flags */
#define TERN_SETTING_REQUIRED 0x1u /* absent key is an error (no default allowed) */
/*
 * TERN_SETTING_IN_RUN_DIR (ABI 1.5; buffer plugins only): a STRING at the top
 * level of the group naming a file the plugin keeps for the run, whose `def`
 * is a bare file name ("\"buffer.sqlite\"": no '/', not "." or ".."). When
 * the key is absent, `tern run` sets it to "<run dir>/<def>" once the run
 * directory exists (created, or found again by --resume) and only then runs
 * create(), so the file lives with the run; `tern check` starts no instance
 * then and prints where the file would be. A key the config sets is used as
 * given. Outside a run the key has no default: get_string() fails with
 * "LABEL.KEY is not set" unless the config sets it.
 */
#define TERN_SETTING_IN_RUN_DIR 0x2u

/*
 * One key of a settings group. Arrays of specs end with an element whose
 * `name` is NULL (TERN_SETTINGS_END). Every element carries its own `size`
 * (use TERN_SETTING / TERN_SETTINGS_END, which fill it in), so the core can
 * step through an array built with an older, smaller definition.
 */
typedef struct tern_setting_spec {
    size_t size;          /* sizeof(tern_setting_spec) as the plugin was built */
    const char *name;     /* the key: [a-z][a-z0-9_]*; NULL ends the array */
    uint32_t type;        /* a tern_setting_type */
    uint32_t flags;       /* TERN_SETTING_REQUIRED, TERN_SETTING_IN_RUN_DIR or 0 */
    /* Default as libconfig literal text ("64", "0.2", "true", "\"fifo\"");
     * NULL means none: the key is then optional and simply absent, or required.
     * Only for INT, FLOAT, BOOL and STRING. */
    const char *def;
    /* Inclusive range for INT and FLOAT. Left out (both 0) means no range;
     * a spec with min > max is refused when the plugin is loaded. */
    double min, max;
    /* STRING only: the allowed values separated by '|' ("block|drop_oldest"),
     * or NULL for any string. */
    const char *choices;
    /* Other spellings users are likely to type, separated by '|'
     * ("learning_rate|learningrate"); an unknown key close to one of them is
     * answered with "did you mean '<name>'?". NULL for none. */
    const char *aka;
    /* GROUP: the keys of the group. LIST: the keys of each element group.
     * NULL for a GROUP means the group may hold anything (not checked). */
    const struct tern_setting_spec *children;
    /* One line for docs and `tern check`: what it means, with units. */
    const char *doc;
} tern_setting_spec;

/* Helpers that fill in `size`; use designated initialisers for the rest:
 *   TERN_SETTING(.name = "capacity", .type = TERN_SETTING_INT, .def = "64",
 *                .min = 1, .max = 1e9, .doc = "experiences held at most"), */
#define TERN_SETTING(...) {.size = sizeof(tern_setting_spec), __VA_ARGS__}
#define TERN_SETTINGS_END {.size = sizeof(tern_setting_spec), .name = NULL}

#ifdef __cplusplus
}
#endif
#endif /* TERN_SETTINGS_H */
