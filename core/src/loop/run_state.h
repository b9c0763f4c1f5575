/* run_state.h: the run's checkpoints (docs/architecture.md §5): DIR/checkpoints/step-N/
 * (RL steps done) or sft-S/ (warm-up steps done) holding policy/ (the model
 * with its optimiser state) and state.json (counters, the data position, the
 * figures so far); DIR/checkpoints/reference/ holds the frozen reference of a
 * same_as run. A checkpoint is written under NAME.tmp and renamed when
 * complete, so a directory without .tmp is always whole. */
#ifndef TERN_LOOP_RUN_STATE_H
#define TERN_LOOP_RUN_STATE_H

#include <jansson.h>

#include "loop/run.h"

/* Write state.json (the object `state`) into the temporary checkpoint `tmp`
 * and rename it to its final name (replacing an older one of that name).
 * *final gets the final path (size n). */
int tern_checkpoint_complete(const char *tmp, json_t *state, char *final, size_t n);

/* The newest complete checkpoint of run directory `dir` (the most RL steps,
 * else the most warm-up steps) into path (size n). TERN_ENOTFOUND with a
 * message when there is none. */
int tern_checkpoint_newest(const char *dir, char *path, size_t n);

/* Read CKPT/state.json. TERN_EINVAL with a message naming the file when it is
 * not a checkpoint state. *state is owned by the caller. */
int tern_checkpoint_read_state(const char *ckpt, json_t **state);

/* Keep only the lines of a JSON Lines file that a resumed run has not yet
 * redone: lines {"stage":"sft","step":s} with s <= sft_step and
 * {"stage":"rl","step":n} with n <= step (others are kept). Missing file: OK. */
int tern_jsonl_truncate(const char *path, int64_t sft_step, int64_t step);

/* rm -r `path` (files, directories, not following links); 0, or -1 with
 * errno set (ENOENT when there was nothing to remove). */
int tern_remove_tree(const char *path);

#endif
