/*
 * batching_work.h: the workload of bench_batching (CPU) and bench_gpu's
 * batching figure: continuous against static batching of generation
 * (the `decode_rows` setting), through any engine's generate.
 */
#ifndef TERN_BENCH_BATCHING_WORK_H
#define TERN_BENCH_BATCHING_WORK_H

#include <stddef.h>

#include "generation/generate.h"

/* llama_generate's contract, for the engine `model`. */
typedef int (*bw_generate)(void *model, const gen_prompt *p, int n, int max_rows,
                           gen_sample *out, char *err, size_t errn);

/* P prompts of 16 to 47 tokens (BOS `bos`, then bytes), G samples each at
 * temperature 1, ending at a stop token (the lowest V/128 ids: about 1 draw
 * in 128 under a near-uniform random model, so lengths spread as EOS makes
 * them in RL) or at max_new; at most R (a multiple of G) samples at once:
 *   static:     generate calls of R samples (R / G prompts) one after the
 *               other: each call's batch shrinks as its samples end, and the
 *               next waits for the longest (what a loop over batches does);
 *   continuous: one call with max_rows R: freed slots take the next prompts'
 *               samples between two decode steps (gen_driver.c);
 *   one batch:  one call of all P·G samples (P·G rows of cache).
 * Every sample draws from its own stream, so the three make the same tokens
 * up to the rounding of products over other rows (a GPU's products round by
 * batch size, and a draw near a boundary then flips): each line counts the
 * samples equal to static's. Modes alternate; each time is the best of
 * `reps`. Prints a table and a TERN_JSON line (`label` names the engine).
 * 0, 1 when some sample differs, -1 on an error (printed). */
int bw_run(bw_generate gen, void *model, int V, int bos, int P, int G, int R, int max_new,
           int reps, const char *label);

#endif
