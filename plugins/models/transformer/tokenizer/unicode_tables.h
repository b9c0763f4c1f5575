/*
 * unicode_tables.h: the data behind unicode.h, generated into
 * unicode_tables.c by unicode_gen.mjs (see there for how each table is
 * derived and which Unicode version it holds).
 */
#ifndef TERN_UNICODE_TABLES_H
#define TERN_UNICODE_TABLES_H

#include <stddef.h>
#include <stdint.h>

typedef struct { uint32_t start; uint8_t bits; } unicode_class_run;   /* UNICODE_* bits */
typedef struct { uint32_t first, last; uint8_t rank; } unicode_ccc_run;
typedef struct { uint32_t cp; uint16_t offset; uint8_t len; } unicode_decomp;
typedef struct { uint32_t first, second, composite; } unicode_comp;

extern const char unicode_tables_version[];
extern const unicode_class_run unicode_class_runs[];
extern const size_t unicode_class_run_count;
extern const unicode_ccc_run unicode_ccc_runs[];
extern const size_t unicode_ccc_run_count;
extern const unicode_decomp unicode_decomps[];
extern const size_t unicode_decomp_count;
extern const uint32_t unicode_decomp_cps[];
extern const unicode_comp unicode_comps[];
extern const size_t unicode_comp_count;

#endif
