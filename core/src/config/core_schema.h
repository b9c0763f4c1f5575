/* core_schema.h: the sections of a config file that the core owns, and the
 * plugin slots (sections naming a plugin) with the keys the core reads there.
 * docs/config.md is the reference of everything declared here. */
#ifndef TERN_CORE_SCHEMA_H
#define TERN_CORE_SCHEMA_H

#include <stddef.h>

#include "tern/plugin.h"

/* The top-level sections (slot sections are declared as groups/lists whose
 * keys are checked per slot, once the plugin's own settings are known). */
extern const tern_setting_spec tern_core_schema[];

/* A section that names a plugin. */
typedef struct tern_slot_def {
    const char *section;             /* "buffer", "rewards", ... */
    uint32_t kind;                   /* the plugin kind it needs */
    int is_list;                     /* a list of groups, one plugin each (rewards) */
    const tern_setting_spec *keys;   /* the keys the core owns in the group */
} tern_slot_def;

extern const tern_slot_def tern_slots[];
extern const size_t tern_n_slots;

/* "model", "reward", "buffer", "sync"; "unknown" otherwise. */
const char *tern_kind_name(uint32_t kind);

#endif
