/*
 * simd.h: which vector paths the layers take on this CPU, and the
 * TERN_SIMD environment switch that turns the wider ones off.
 *
 * Machines of one kind differ: some CPUs have AVX-512 with BF16, some only
 * AVX2 + FMA, some (other architectures) neither. Each layer with a vector
 * path keeps its plain C loop beside it and asks here which to run, so one
 * build runs everywhere. TERN_SIMD caps the level, so that a machine with
 * AVX-512 can also run (and test) what an AVX2-only or a plain CPU runs:
 *
 *   TERN_SIMD unset or ""   the best this CPU has
 *   TERN_SIMD=avx2          AVX2 + FMA at most (no AVX512-BF16 products)
 *   TERN_SIMD=none          plain C only
 *
 * OpenBLAS chooses its own kernels by CPU; OPENBLAS_CORETYPE=Haswell makes it
 * choose an AVX2 machine's (scripts/test.sh sets both for its AVX2 pass).
 */
#ifndef TERN_LAYERS_SIMD_H
#define TERN_LAYERS_SIMD_H

#include <stddef.h>

/* The vector paths, each including the ones below it. */
typedef enum simd_level {
    SIMD_PLAIN = 0,       /* plain C */
    SIMD_AVX2 = 1,        /* AVX2 + FMA: fastexp.h, attention, SwiGLU */
    SIMD_AVX512_BF16 = 2, /* AVX-512F + AVX512-BF16: gemm.c's bf16 products */
} simd_level;

/* The level this CPU (and OS) supports, whatever TERN_SIMD says. */
simd_level simd_cpu_level(void);

/* The level the layers run: simd_cpu_level() capped by TERN_SIMD, read once
 * per process. A TERN_SIMD that simd_env_check refuses counts as "none". */
simd_level simd_level_in_force(void);

/* 0 when TERN_SIMD is unset, empty or a known value; otherwise -1 with a
 * message in err[n] naming the variable, its value and the values it takes. */
int simd_env_check(char *err, size_t n);

/* When TERN_SIMD holds the level below what this CPU supports, its value
 * ("avx2", "none"); NULL otherwise. For messages that say why a path is off. */
const char *simd_env_cap(void);

#endif
