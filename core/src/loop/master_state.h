/* master_state.h: what the master role keeps while a run goes (private to
 * the master's files: master.c runs the role, run_setup.c makes the run's
 * instances and directory, run_figures.c writes checkpoints' state and the
 * summary and reads them back on resume). */
#ifndef TERN_LOOP_MASTER_STATE_H
#define TERN_LOOP_MASTER_STATE_H

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>

#include "config/diag.h"
#include "host/session.h"

#include "algo/group_filter.h"
#include "loop/ledger.h"
#include "loop/run.h"

/* Position p of a stream is task perm_e[p mod n] of epoch e = p / n, where
 * perm_e is a seeded shuffle of epoch e (the identity without shuffle): the
 * task of any position follows from the seed alone, so a resumed run needs
 * only the position. */
typedef struct dealer {
    const char *stream;
    uint32_t *perm;
    const uint32_t *items; /* the task indices dealt, n of them; NULL: 0..n-1 */
    size_t n;
    int64_t epoch;
    int shuffle;
} dealer;

/* Counts of groups the master dropped, by the RL step (0-based) they would
 * have trained in, so a metrics line counts the same groups however the
 * rollouts and the step reports interleave: steps base .. base + w - 1. */
typedef struct step_counts {
    int64_t base;
    uint64_t *n;
    size_t w;
} step_counts;

typedef struct master {
    tern_run *run;
    dealer train_deal, sft_deal;
    tern_ledger ledger; /* groups consumed, for commits and a resume's dealing */
    FILE *metrics, *rollouts;
    FILE *eval_responses;           /* every evaluation response (loop/kept_responses.h) */
    int rollouts_said, eval_responses_said; /* their run.keep_mb was reached and logged */
    int lock_fd; /* the run directory's lock (tern_rundir_lock), -1 for none */
    double t_start, master_wait;
    int64_t sft_pushed, batches_pushed;
    int64_t batches_received;  /* rollouts back from the explorers */
    int64_t deal_from;         /* the ledger's watermark when the run (part) started */
    uint64_t deal_above;       /* groups above it consumed then */
    uint64_t groups_stale;     /* dropped by the trainer as too stale (stand-ins dealt) */
    uint64_t groups_discarded; /* dropped or skipped by the buffer (stand-ins dealt) */
    uint64_t groups_filtered;  /* dropped by algorithm.filter_groups (stand-ins dealt) */
    tern_group_filter filter;  /* algorithm.filter_groups */
    /* holding explorers back (asynchronous modes, max_staleness): */
    uint64_t groups_dealt;     /* in the batches this part dealt */
    uint64_t groups_trained;   /* that its steps trained on */
    int64_t version_ready;     /* the newest weights the trainer said it published */
    int fixed_schedule;        /* the sync plugin plans fixed versions (WAIT_FOR_VERSION) */
    step_counts filtered_at;   /* groups filtered, by the step they would have trained in */
    step_counts surplus_at;    /* surplus groups the master dropped as stale, the same way */
    /* the rollouts' figures since the last metrics line (explorer side) */
    double line_gen_tokens, line_gen_seconds, line_explorer_wait;
    /* the tools' calls in the trajectories received since the last line */
    uint64_t line_tool_calls, line_tool_invalid, line_tool_failed, line_trajectories;
    uint64_t line_wf_calls, line_wf_rewrites; /* a workflow's, since the last line */
    pthread_t *explorer_threads; /* [n_explorers] once RL started */
    tern_explorer_arg *explorer_args;
    uint32_t explorers_started;
    int64_t steps_done, sft_done;
    double accuracy_before, accuracy_after; /* -1: unknown, or no task judged */
    double eval_reward_before, eval_reward_after; /* NAN: unknown */
    json_t *eval_before, *eval_after;
    double reward_first, reward_last;
    int have_reward_first;
    double rollout_tokens, rollout_seconds, train_tokens, train_seconds;
    char last_checkpoint[PATH_MAX + 64];
    int finished, stopped;
} master;


/* master.c: the master's run; `rk` is NULL in one process, else the MPI
 * ranks it coordinates (loop/ranks.h). */
struct tern_ranks;
struct tern_loop_options; /* loop/master.h */
int tern_master_run(tern_session *s, const struct tern_loop_options *o, tern_diag *d,
                    struct tern_ranks *rk);

/* run_setup.c */
/* Make the model instances the run needs beyond the session's (one per
 * explorer, the evaluator, a same_as reference), after tern_run_check. */
int tern_run_make_models(tern_run *run);
/* Destroy the instances tern_run_make_models made. */
void tern_run_drop_models(tern_run *run);
/* Load the train and eval task files (bad input: TERN_ECONFIG, message set). */
int tern_run_load_data(tern_run *run);
/* Create the run directory (or, resuming, load its newest checkpoint), start
 * the instances that wait for it (host/session.h) and open metrics.jsonl and
 * rollouts.jsonl for appending. */
int tern_run_open_dir(tern_run *run, master *ms, const struct tern_loop_options *o);

/* run_figures.c */
/* Write the master's figures as the temporary checkpoint's state.json and
 * give it its final name. */
int tern_run_complete_checkpoint(tern_run *run, master *ms, const char *tmp, int64_t sft_step,
                                 int64_t step, int rl_started);
/* Read a checkpoint back: its state into run->resume and *ms, its models
 * into the policy (and a same_as reference). TERN_EINVAL when the checkpoint
 * is damaged (its state.json does not read, or its policy does not load),
 * *ms then unchanged, so a resume can try the one before
 * (tern_run_resume_newest); TERN_ECONFIG for a refusal of the run (a changed
 * setting or task file, a step past trainer.steps, the reference). */
int tern_run_load_checkpoint(tern_run *run, master *ms, const char *ckpt);
/* The models of checkpoint `ckpt`: its policy with the optimiser state
 * (CKPT/policy), and the frozen copy of a same_as reference once RL began
 * (RUN_DIR/checkpoints/reference, one for every checkpoint). Each failure's
 * message names the directory; the model's status is returned as it is. */
int tern_run_load_policy(tern_run *run, const char *ckpt);
int tern_run_load_reference(tern_run *run);
/* summary.json */
int tern_run_write_summary(tern_run *run, master *ms, int interrupted);

#endif
