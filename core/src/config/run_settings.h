/* run_settings.h: the sections of a config that drive the learning loop
 * (data, explorer, trainer, algorithm, eval; docs/config.md), their schema,
 * and the typed values a run reads from them. */
#ifndef TERN_LOOP_RUN_SETTINGS_H
#define TERN_LOOP_RUN_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

#include "algo/advantage.h"
#include "algo/policy_loss.h"
#include "config/config.h"
#include "config/diag.h"
#include "tern/settings.h"

/* The keys of each loop section; the core schema (core_schema.c) names them. */
extern const tern_setting_spec tern_data_keys[], tern_explorer_keys[], tern_trainer_keys[],
    tern_algorithm_keys[], tern_eval_keys[], tern_ranks_keys[], tern_workflow_keys[];

/* The workflow section's limits. */
enum {
    TERN_WORKFLOW_MAX_CONCURRENCY = 256, /* programs at once */
    TERN_WORKFLOW_MAX_ARGS = 256         /* words of its command */
};

typedef enum tern_lr_schedule {
    TERN_LR_CONSTANT = 1,
    TERN_LR_LINEAR = 2,
    TERN_LR_COSINE = 3
} tern_lr_schedule;

typedef enum tern_kl_placement {
    TERN_KL_IN_LOSS = 1,
    TERN_KL_IN_REWARD = 2
} tern_kl_placement;

typedef struct tern_run_settings {
    /* data */
    char *train_path, *eval_path; /* resolved against the config's directory; eval may be NULL */
    int skip_bad, shuffle;
    char *system_prompt;          /* data.system_prompt, or NULL */
    /* explorer */
    uint32_t batch_tasks, group_size, max_tokens;
    /* environment and tools sections (docs/agents.md): whether there are,
     * and the model's turns at most in a trajectory: environment.max_turns,
     * else explorer.tool_turns with tools, else 1 (every response is one
     * answer) */
    int has_environment;
    int has_tools;
    uint32_t max_turns;
    uint32_t waves;         /* explorer.waves: the batch's tasks take turns in this many */
    /* the workflow section (docs/agents.md, "Workflows"): a program of the
     * user's runs each trajectory, talking to the policy over HTTP */
    int has_workflow;
    char **workflow_command;       /* its argv, NULL-ended (copies) */
    char *workflow_dir;            /* where it runs: the config's folder */
    uint32_t workflow_concurrency; /* programs running at once */
    double workflow_timeout_s;     /* one trajectory's wall clock at most */
    double temperature, top_p;
    int32_t top_k;
    /* trainer */
    int64_t steps, save_every, warmup_steps;
    int64_t keep_checkpoints;     /* newest step/sft checkpoints kept; 0: all */
    double lr, min_lr_ratio, beta1, beta2, adam_eps, weight_decay, grad_clip;
    tern_lr_schedule schedule;
    int score_always;             /* trainer.score_pass = "always": never skip score() */
    uint32_t mini_batches, epochs; /* a step's updates: mini_batches x epochs AdamW steps */
    int64_t sft_steps;
    uint32_t sft_batch_tasks;
    double sft_lr;
    /* algorithm */
    tern_adv_params adv;
    tern_loss_params loss;
    tern_kl_placement kl_placement;
    int filter_groups;           /* DAPO's dynamic sampling (algo/group_filter.h) */
    uint32_t filter_max_batches; /* its budget per step, in batches */
    /* eval */
    int64_t eval_every;
    uint32_t eval_max_tokens;
    int64_t eval_limit;
    /* ranks (a run on MPI ranks, docs/distributed.md) */
    uint32_t rank_trainers;     /* data-parallel trainer ranks (>= 1) */
    uint32_t rank_explorers;    /* explorer ranks; 0: every rank after the trainers' but the
                                   reward ranks */
    uint32_t rank_rewards;      /* reward-worker ranks (the last ones) */
    /* what the run directory keeps of the responses (run section) */
    uint32_t keep_groups;       /* groups per RL step kept with every response */
    uint64_t keep_bytes;        /* rollouts.jsonl / eval_responses.jsonl: kept responses up to */
} tern_run_settings;

/* Make sure every loop section exists (with its defaults filled in, so the
 * resolved config shows every value in force), then read them into *s.
 * Problems go to `d` as "FILE:LINE: message"; returns TERN_OK or
 * TERN_ECONFIG (or TERN_ENOMEM). */
int tern_run_settings_read(tern_config *c, tern_run_settings *s, tern_diag *d);
void tern_run_settings_free(tern_run_settings *s);

/* Each of data.train and data.eval that the config names but that cannot be
 * read (missing, no permission) as one "FILE:LINE: data.train = "GIVEN":
 * PATH: cannot open: WHY (...)" line in `d`, whatever else is wrong with the
 * config, so that one `tern check` reports a typo and a missing file
 * together. Returns how many lines it added. */
size_t tern_run_data_files_check(const tern_config *c, tern_diag *d);

/* The learning rate of RL step `step` (0-based) under the schedule. */
double tern_run_lr(const tern_run_settings *s, int64_t step);

#endif
