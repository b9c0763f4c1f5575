/* run_state.h: the run's checkpoints (docs/architecture.md §5): DIR/checkpoints/step-N/
 * (RL steps done) or sft-S/ (warm-up steps done) holding policy/ (the model
 * with its optimiser state) and state.json (counters, the data position, the
 * figures so far); DIR/checkpoints/reference/ holds the frozen reference of a
 * same_as run. A checkpoint is written under NAME.tmp and renamed when
 * complete, so a directory without .tmp is always whole. The JSON Lines files
 * of the run (metrics.jsonl, rollouts.jsonl) hold whole lines only. */
#ifndef TERN_LOOP_RUN_STATE_H
#define TERN_LOOP_RUN_STATE_H

#include <jansson.h>
#include <stdio.h>

#include "loop/run.h"

/* Write state.json (the object `state`) into the temporary checkpoint `tmp`
 * and give the directory its final name as tern_checkpoint_publish does.
 * *final gets the final path (size n). On a failure before the rename, tmp
 * is removed. */
int tern_checkpoint_complete(const char *tmp, json_t *state, char *final, size_t n);

/* Make the directory `tmp` durable and rename it to `final` (replacing one of
 * that name), in the order that leaves a whole directory under `final` after
 * a crash or power loss at any point: fsync every file in tmp and every
 * directory below it (contents before their directory), then tmp itself,
 * rename, then fsync final's parent. TERN_EIO with a message naming the file
 * and the step; a failure before the rename removes tmp (and keeps an older
 * `final`), a failure of the last fsync leaves the new `final` in place. */
int tern_checkpoint_publish(const char *tmp, const char *final);

/* Test seam, NULL in a run: when set, it is called before each write, fsync
 * and rename of tern_checkpoint_complete/publish with the operation's name
 * ("write", "fsync", "rename") and path; a nonzero return makes that
 * operation fail with that errno, as a full or failing disk would. */
extern int (*tern_checkpoint_fault)(const char *op, const char *path);

/* The newest complete checkpoint of run directory `dir` (the most RL steps,
 * else the most warm-up steps) into path (size n). TERN_ENOTFOUND with a
 * message when there is none. */
int tern_checkpoint_newest(const char *dir, char *path, size_t n);

/* Every complete checkpoint of run directory `dir`, in the order a resume
 * tries them: DIR/checkpoints/step-N by N descending, then sft-S by S
 * descending (names with a suffix, NAME.tmp, NAME.damaged, ..., are not
 * checkpoints). *paths gets *n malloc'd paths (free with
 * tern_checkpoint_list_free). TERN_ENOTFOUND with a message when there is
 * none, TERN_ENOMEM. */
int tern_checkpoint_list(const char *dir, char ***paths, size_t *n);
void tern_checkpoint_list_free(char **paths, size_t n);

/* Set the damaged checkpoint `ckpt` aside, so that no later resume tries it
 * again: rename it to CKPT.damaged (CKPT.damaged-2, -3, ... when that name is
 * taken) and sync its directory. Nothing in it is removed. The new name into
 * `to` (size n). TERN_OK, or TERN_EIO with a message (ckpt keeps its name). */
int tern_checkpoint_set_aside(const char *ckpt, char *to, size_t n);

/* --resume (run_resume.c). Each of run directory `dir`, its checkpoints/,
 * lock and log.txt that exists is writable by this process (checked before
 * anything in it changes): TERN_OK, or TERN_ECONFIG with a message naming
 * the first that is not and the fix. */
int tern_run_check_writable(const char *dir);

/* Load the newest checkpoint of run->dir that can be resumed from, with
 * tern_run_load_checkpoint (loop/master_state.h). A damaged one (its
 * state.json does not read, or its policy does not load: TERN_EINVAL) is
 * logged as a warning naming it and why, and the one before is tried, and so
 * on; once one loads, the damaged ones newer than it are set aside
 * (tern_checkpoint_set_aside) so that a later resume does not try them again.
 * A refusal that is not one checkpoint's damage (a changed setting, a step
 * past trainer.steps, the reference) ends the search with its own status.
 * None usable: TERN_ECONFIG listing what was tried, nothing renamed. None at
 * all (a run stopped before its first): TERN_ENOTFOUND, and the caller
 * starts the run again from the beginning. */
struct master;
int tern_run_resume_newest(tern_run *run, struct master *ms);

/* After the checkpoint loaded (its ledger in ms): let a durable buffer
 * (one with the commit and recover ops) forget the groups the checkpoint's
 * steps consumed, then take back the groups handed out since and list
 * what it holds into the ledger, so that they are trained and not dealt
 * again. A buffer without those ops held nothing that survived. A buffer
 * holding groups the ledger says were consumed is another run's:
 * TERN_ECONFIG. Other failures: the plugin's status with a message. */
int tern_run_recover_buffer(tern_run *run, struct master *ms);

/* Read CKPT/state.json. TERN_EINVAL with a message naming the file when it is
 * not a checkpoint state. *state is owned by the caller. */
int tern_checkpoint_read_state(const char *ckpt, json_t **state);

/* Remove what writes that did not finish left in run directory `dir` (a
 * process killed, a machine that lost power): DIR/NAME.tmp files (summary,
 * trace, a JSON Lines rewrite) and DIR/checkpoints/NAME.tmp directories. A
 * checkpoint caught between its two renames (NAME.old without NAME) gets its
 * name back; NAME.old beside NAME is removed. Each is logged as a warning. */
void tern_run_remove_leftovers(const char *dir);

/* Keep only the lines of a JSON Lines file that a resumed run has not yet
 * redone: lines {"stage":"sft","step":s} with s <= sft_step and
 * {"stage":"rl","step":n} with n <= step (lines without a stage are kept).
 * A line that is not a whole JSON object (a last line torn by a crash or a
 * full disk, or one torn earlier) is dropped with a warning, so that the
 * next line appended starts a line of its own. Missing file: OK. */
int tern_jsonl_truncate(const char *path, int64_t sft_step, int64_t step);

/* rm -r `path` (files, directories, not following links); 0, or -1 with
 * errno set (ENOENT when there was nothing to remove). */
int tern_remove_tree(const char *path);

#endif
