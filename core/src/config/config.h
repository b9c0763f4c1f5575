/* config.h: the run's configuration: a libconfig tree read from a file (or a
 * string), with `-o path=value` overrides applied, and helpers that name a
 * setting's place ("FILE:LINE") and path ("rewards[0].weight") in messages. */
#ifndef TERN_CONFIG_H
#define TERN_CONFIG_H

#include <libconfig.h>
#include <stddef.h>

#include "config/diag.h"

typedef struct tern_config {
    config_t cfg;
    int live;         /* cfg was initialised and must be destroyed */
    char *path;       /* the file read, or a label such as "<string>" */
    char **overrides; /* the -o texts, kept for "where" of overridden settings */
    size_t n_overrides;
    char **files; /* the file and its @include files: the settings' source_file */
    size_t n_files;
} tern_config;

/* Read `path` and its @include files (each taken from the folder of the file
 * that holds it; config/config_text.h has the limits). A missing or
 * unreadable file or a syntax error is reported in `d` as "FILE:LINE:
 * message" and returns TERN_ECONFIG; *c is then freed. */
int tern_config_read_file(tern_config *c, const char *path, tern_diag *d);
/* Same from a string in memory; `label` names it in messages, and an
 * @include in it is taken from the working directory. */
int tern_config_read_string(tern_config *c, const char *text, const char *label, tern_diag *d);
void tern_config_free(tern_config *c);

/* Apply one "path=value" override. The value is read as a libconfig literal
 * (5, 5.0, true, "text", [..]); a bare word that is no literal is a string.
 * Missing groups on the path are created. TERN_ECONFIG with a message in `d`
 * on a malformed override or a path through a non-group. */
int tern_config_override(tern_config *c, const char *spec, tern_diag *d);

/* The setting at `path` below `root`: dot-separated names, list elements by
 * number ("rewards.0.weight" or "rewards.[0].weight"). NULL if absent. */
config_setting_t *tern_config_lookup(const config_setting_t *root, const char *path);

/* "FILE:LINE" where `s` was written, or "-o TEXT" when an override set it, or
 * the file alone when libconfig knows no line (the root). */
const char *tern_config_where(const tern_config *c, const config_setting_t *s, char *buf,
                              size_t n);
/* The path of `s` from the root: "trainer.lr", "rewards[0].weight". */
const char *tern_config_path(const config_setting_t *s, char *buf, size_t n);

/* The directories of the top-level `plugin_path`, relative entries taken
 * from the config file's directory. *dirs (n entries) is freed with
 * tern_config_free_dirs. TERN_OK (none: *n == 0) or TERN_ENOMEM. */
int tern_config_plugin_dirs(const tern_config *c, char ***dirs, size_t *n);
void tern_config_free_dirs(char **dirs, size_t n);

/* Name of a libconfig type, for messages ("an integer", "a string", ...). */
const char *tern_config_type_name(int type);

#endif
