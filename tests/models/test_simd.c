/* test_simd.c: the vector level the transformer's layers run (layers/simd.h)
 * and the TERN_SIMD switch that caps it, so that an AVX-512 machine can run
 * what an AVX2-only or a plain CPU runs. TERN_SIMD is read once per process;
 * Criterion runs each test in a process of its own, and each test's init sets
 * the variable before anything reads it. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "layers/fastexp.h"
#include "layers/gemm.h"
#include "layers/simd.h"

static void env_unset(void) { unsetenv("TERN_SIMD"); }
static void env_avx2(void) { setenv("TERN_SIMD", "avx2", 1); }
static void env_none(void) { setenv("TERN_SIMD", "none", 1); }
static void env_typo(void) { setenv("TERN_SIMD", "avx3", 1); }

Test(simd, unset_runs_the_best_this_cpu_has, .init = env_unset)
{
    char err[256];
    cr_expect_eq(simd_env_check(err, sizeof err), 0);
    cr_expect_eq(simd_level_in_force(), simd_cpu_level());
    cr_expect_null(simd_env_cap());
    cr_expect_eq(gemm_bf16_available(), simd_cpu_level() >= SIMD_AVX512_BF16);
}

Test(simd, avx2_turns_the_bf16_products_off, .init = env_avx2)
{
    char err[256];
    cr_expect_eq(simd_env_check(err, sizeof err), 0);
    simd_level cpu = simd_cpu_level();
    cr_expect_eq(simd_level_in_force(), cpu < SIMD_AVX2 ? cpu : SIMD_AVX2);
    cr_expect_eq(gemm_bf16_available(), 0);
    /* named as the cause only where it lowered the level */
    if (cpu > SIMD_AVX2)
        cr_expect_str_eq(simd_env_cap(), "avx2");
    else
        cr_expect_null(simd_env_cap());
#ifdef TERN_SIMD_AVX2
    cr_expect_eq(simd_avx2(), cpu >= SIMD_AVX2);
#endif
}

Test(simd, none_runs_plain_c, .init = env_none)
{
    char err[256];
    cr_expect_eq(simd_env_check(err, sizeof err), 0);
    cr_expect_eq(simd_level_in_force(), SIMD_PLAIN);
    cr_expect_eq(gemm_bf16_available(), 0);
    cr_expect_str_eq(simd_exp_path(), "libm expf");
}

Test(simd, an_unknown_value_is_refused_and_runs_plain_c, .init = env_typo)
{
    char err[256];
    cr_assert_eq(simd_env_check(err, sizeof err), -1);
    cr_expect(strstr(err, "TERN_SIMD=avx3") && strstr(err, "avx2") && strstr(err, "none"),
              "%s", err);
    cr_expect_eq(simd_level_in_force(), SIMD_PLAIN);
}
