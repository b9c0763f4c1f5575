/* run_settings.c: the loop sections' schema and reader (see run_settings.h). */
#include "config/run_settings.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "tern/environment.h"
#include "config/schema.h"

#define BIG 1e9

const tern_setting_spec tern_data_keys[] = {
    TERN_SETTING(.name = "train", .type = TERN_SETTING_STRING, .aka = "train_file|tasks",
                 .doc = "training tasks, JSON Lines (relative to the config file's directory)"),
    TERN_SETTING(.name = "eval", .type = TERN_SETTING_STRING, .aka = "eval_file|test|validation",
                 .doc = "held-out tasks for greedy evaluation (same format); none: no accuracy"),
    TERN_SETTING(.name = "skip_bad", .type = TERN_SETTING_BOOL, .def = "false",
                 .aka = "skip_malformed|skip_invalid",
                 .doc = "skip and count malformed task lines instead of stopping at the first"),
    TERN_SETTING(.name = "shuffle", .type = TERN_SETTING_BOOL, .def = "true",
                 .doc = "visit the training tasks in a new seeded order every epoch"),
    TERN_SETTING(.name = "system_prompt", .type = TERN_SETTING_STRING, .aka = "system",
                 .doc = "system turn before each task's prompt (a task's own \"system\" field "
                        "wins); needs a model with a chat template"),
    TERN_SETTINGS_END,
};

const tern_setting_spec tern_explorer_keys[] = {
    TERN_SETTING(.name = "batch_tasks", .type = TERN_SETTING_INT, .def = "16", .min = 1,
                 .max = 1e6, .aka = "batch_size|tasks_per_batch",
                 .doc = "tasks per explorer batch (one trainer step trains on one batch)"),
    TERN_SETTING(.name = "group_size", .type = TERN_SETTING_INT, .def = "8", .min = 1,
                 .max = 4096, .aka = "n_samples|samples|repeat_times",
                 .doc = "responses generated per task (a GRPO group)"),
    TERN_SETTING(.name = "temperature", .type = TERN_SETTING_FLOAT, .def = "1.0", .min = 0,
                 .max = 100, .doc = "sampling temperature of rollouts (> 0; the trainer scores at the same temperature)"),
    TERN_SETTING(.name = "top_k", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = 1e9,
                 .doc = "sample from the k likeliest tokens; 0: off"),
    TERN_SETTING(.name = "top_p", .type = TERN_SETTING_FLOAT, .def = "1.0", .min = 1e-6,
                 .max = 1, .doc = "nucleus sampling mass; 1: off"),
    TERN_SETTING(.name = "max_tokens", .type = TERN_SETTING_INT, .def = "16", .min = 1,
                 .max = 1e6, .aka = "max_new_tokens|response_length",
                 .doc = "response tokens at most (a response ends earlier at EOS)"),
    TERN_SETTING(.name = "waves", .type = TERN_SETTING_INT, .def = "2", .min = 1, .max = 16,
                 .doc = "with an environment or tools: the batch's tasks take turns in this many "
                        "waves; while one decodes, the others' turns are with the environment "
                        "and the tools (1: all decode, then all step)"),
    /* no .def: given beside an environment (or without tools) it is refused */
    TERN_SETTING(.name = "tool_turns", .type = TERN_SETTING_INT, .min = 1,
                 .max = TERN_ENV_MAX_TURNS, .aka = "max_tool_turns",
                 .doc = "with tools and no environment: the model's turns in one trajectory at "
                        "most, its calls and its answer (default 4; with an environment: its "
                        "max_turns)"),
    TERN_SETTINGS_END,
};

static const tern_setting_spec sft_keys[] = {
    TERN_SETTING(.name = "steps", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = BIG,
                 .doc = "supervised warm-up steps on (prompt, answer) before RL; 0: none"),
    TERN_SETTING(.name = "batch_tasks", .type = TERN_SETTING_INT, .def = "32", .min = 1,
                 .max = 1e6, .doc = "tasks per warm-up step"),
    TERN_SETTING(.name = "lr", .type = TERN_SETTING_FLOAT, .def = "1e-3", .min = 0, .max = 10,
                 .doc = "learning rate of the warm-up (constant)"),
    TERN_SETTINGS_END,
};

const tern_setting_spec tern_trainer_keys[] = {
    TERN_SETTING(.name = "steps", .type = TERN_SETTING_INT, .def = "100", .min = 0, .max = BIG,
                 .aka = "total_steps|train_steps|max_steps",
                 .doc = "RL steps (one explorer batch each)"),
    TERN_SETTING(.name = "lr", .type = TERN_SETTING_FLOAT, .def = "1e-4", .min = 0, .max = 10,
                 .aka = "learning_rate", .doc = "peak learning rate of RL"),
    TERN_SETTING(.name = "lr_schedule", .type = TERN_SETTING_STRING, .def = "\"constant\"",
                 .choices = "constant|linear|cosine",
                 .doc = "decay after warm-up: constant, linear or cosine down to min_lr_ratio * lr"),
    TERN_SETTING(.name = "warmup_steps", .type = TERN_SETTING_INT, .def = "0", .min = 0,
                 .max = BIG, .doc = "steps of linear learning-rate warm-up"),
    TERN_SETTING(.name = "min_lr_ratio", .type = TERN_SETTING_FLOAT, .def = "0.1", .min = 0,
                 .max = 1, .doc = "floor of the decayed learning rate, as a fraction of lr"),
    TERN_SETTING(.name = "beta1", .type = TERN_SETTING_FLOAT, .def = "0.9", .min = 0,
                 .max = 0.999999, .doc = "AdamW first-moment decay"),
    TERN_SETTING(.name = "beta2", .type = TERN_SETTING_FLOAT, .def = "0.99", .min = 0,
                 .max = 0.999999, .doc = "AdamW second-moment decay"),
    TERN_SETTING(.name = "eps", .type = TERN_SETTING_FLOAT, .def = "1e-8", .min = 1e-30,
                 .max = 1, .doc = "AdamW epsilon"),
    TERN_SETTING(.name = "weight_decay", .type = TERN_SETTING_FLOAT, .def = "0.0", .min = 0,
                 .max = 10, .doc = "AdamW decoupled weight decay"),
    TERN_SETTING(.name = "grad_clip", .type = TERN_SETTING_FLOAT, .def = "1.0", .min = 0,
                 .max = 1e9, .aka = "max_grad_norm|clip_grad",
                 .doc = "clip the global gradient norm to this; 0: off"),
    TERN_SETTING(.name = "save_every", .type = TERN_SETTING_INT, .def = "50", .min = 0,
                 .max = BIG, .aka = "checkpoint_every|save_interval",
                 .doc = "checkpoint every this many RL steps (and always at the end); 0: end only"),
    TERN_SETTING(.name = "keep_checkpoints", .type = TERN_SETTING_INT, .def = "0", .min = 0,
                 .max = BIG, .aka = "save_total_limit|max_checkpoints",
                 .doc = "keep the newest this many step and warm-up checkpoints, removing older "
                 "ones once a new one is complete; 0: keep all"),
    TERN_SETTING(.name = "mini_batches", .type = TERN_SETTING_INT, .def = "1", .min = 1,
                 .max = 1e6, .aka = "num_mini_batches|ppo_mini_batches",
                 .doc = "optimizer updates per pass over a step's batch: its groups split "
                        "into this many mini-batches, one AdamW step each (verl's "
                        "train_batch_size / ppo_mini_batch_size); at most explorer.batch_tasks"),
    TERN_SETTING(.name = "epochs", .type = TERN_SETTING_INT, .def = "1", .min = 1, .max = 1000,
                 .aka = "ppo_epochs|num_iterations",
                 .doc = "passes over a step's batch (verl's ppo_epochs, TRL's num_iterations); "
                        "a step makes mini_batches x epochs updates"),
    TERN_SETTING(.name = "score_pass", .type = TERN_SETTING_STRING, .def = "\"auto\"",
                 .choices = "auto|always",
                 .doc = "auto: an on-policy step (every group from the current weights, "
                        "untruncated sampling, no entropy bonus or off-policy correction) "
                        "takes the explorer's log-probs for its loss and skips the separate "
                        "scoring pass, the figures coming from the backward pass; always: "
                        "score every step first"),
    TERN_SETTING(.name = "sft", .type = TERN_SETTING_GROUP, .children = sft_keys,
                 .aka = "warmup|sft_warmup", .doc = "the optional supervised warm-up stage"),
    TERN_SETTINGS_END,
};

static const tern_setting_spec kl_keys[] = {
    TERN_SETTING(.name = "estimator", .type = TERN_SETTING_STRING, .def = "\"k3\"",
                 .choices = "none|k1|k2|k3", .doc = "KL estimator to the reference"),
    TERN_SETTING(.name = "coef", .type = TERN_SETTING_FLOAT, .def = "0.0", .min = 0, .max = 1e3,
                 .aka = "beta|kl_coef", .doc = "weight of the KL term (0: measured, not used)"),
    TERN_SETTING(.name = "placement", .type = TERN_SETTING_STRING, .def = "\"loss\"",
                 .choices = "loss|reward",
                 .doc = "loss: a loss term per token; reward: coef * sum of KL over the "
                        "response is subtracted from its reward"),
    TERN_SETTINGS_END,
};

const tern_setting_spec tern_algorithm_keys[] = {
    TERN_SETTING(.name = "advantage", .type = TERN_SETTING_STRING, .def = "\"grpo\"",
                 .choices = "grpo|rloo|reinforce++|reinforce_pp|kimi", .aka = "estimator|name",
                 .doc = "advantage estimator"),
    TERN_SETTING(.name = "loss", .type = TERN_SETTING_STRING, .def = "\"ppo\"",
                 .choices = "ppo|kimi|gspo", .aka = "policy_loss",
                 .doc = "policy loss: ppo (clipped token ratio), kimi (mirror descent) or gspo "
                        "(clipped sequence ratio; its clip is small, e.g. 0.0003/0.0004)"),
    TERN_SETTING(.name = "std_normalize", .type = TERN_SETTING_BOOL, .def = "true",
                 .aka = "normalize_std|scale_rewards",
                 .doc = "GRPO: divide advantages by the group's reward std"),
    TERN_SETTING(.name = "std", .type = TERN_SETTING_STRING, .def = "\"population\"",
                 .choices = "population|sample",
                 .doc = "the std advantages are divided by (GRPO with std_normalize, "
                        "REINFORCE++): population divides the squares by n, sample by n - 1 "
                        "(as verl and TRL do: at G = 4 their advantages are 1.15x smaller)"),
    TERN_SETTING(.name = "clip", .type = TERN_SETTING_FLOAT, .def = "0.2", .min = 0,
                 .max = 0.999, .aka = "clip_low|clip_ratio|epsilon",
                 .doc = "PPO: ratio kept in [1 - clip, 1 + clip_high]"),
    TERN_SETTING(.name = "clip_high", .type = TERN_SETTING_FLOAT, .min = 0, .max = 100,
                 .doc = "PPO: upper clip (default: clip)"),
    TERN_SETTING(.name = "dual_clip", .type = TERN_SETTING_FLOAT, .def = "0.0", .min = 0,
                 .max = 1e6, .doc = "PPO dual clip c > 1 for negative advantages; 0: off"),
    TERN_SETTING(.name = "aggregation", .type = TERN_SETTING_STRING, .def = "\"token_mean\"",
                 .choices = "token_mean|seq_mean|token_sum_norm",
                 .aka = "loss_agg|loss_aggregation",
                 .doc = "average the loss over all tokens, per response then over responses, "
                        "or (Dr. GRPO) sum it over tokens and divide by responses x "
                        "explorer.max_tokens"),
    TERN_SETTING(.name = "off_policy", .type = TERN_SETTING_STRING, .def = "\"none\"",
                 .choices = "none|tis|decoupled", .aka = "off_policy_correction|correction",
                 .doc = "ppo: weigh each token by the trainer's over the explorer's probability, "
                        "capped at tis_cap (tis) or not (decoupled, AReaL), instead of "
                        "clipping the ratio to the explorer's (none)"),
    TERN_SETTING(.name = "tis_cap", .type = TERN_SETTING_FLOAT, .def = "2.0", .min = 1,
                 .max = 1e6, .aka = "tis_c|is_cap",
                 .doc = "off_policy = \"tis\": the cap of the importance weight"),
    TERN_SETTING(.name = "kl", .type = TERN_SETTING_GROUP, .children = kl_keys,
                 .doc = "KL to the frozen reference model"),
    TERN_SETTING(.name = "entropy_coef", .type = TERN_SETTING_FLOAT, .def = "0.0", .min = 0,
                 .max = 1e3, .aka = "entropy_bonus", .doc = "entropy bonus weight"),
    TERN_SETTING(.name = "kimi_tau", .type = TERN_SETTING_FLOAT, .def = "0.1", .min = 0,
                 .max = 1e6, .aka = "tau", .doc = "Kimi loss: weight of the squared log-ratio"),
    TERN_SETTING(.name = "length_coef", .type = TERN_SETTING_FLOAT, .def = "0.0", .min = 0,
                 .max = 1e6, .aka = "length_penalty",
                 .doc = "weight of Kimi's length penalty added to rewards; 0: off"),
    TERN_SETTING(.name = "filter_groups", .type = TERN_SETTING_BOOL, .def = "false",
                 .aka = "dynamic_sampling",
                 .doc = "DAPO's dynamic sampling: drop groups whose rewards are all equal "
                        "(no signal) and generate stand-ins"),
    TERN_SETTING(.name = "filter_max_batches", .type = TERN_SETTING_INT, .def = "10", .min = 1,
                 .max = 1000000, .aka = "max_num_gen_batches",
                 .doc = "filter_groups: a step examines at most this many batches of groups; "
                        "past that it keeps groups with equal rewards"),
    TERN_SETTING(.name = "overlong_buffer", .type = TERN_SETTING_INT, .def = "0", .min = 0,
                 .max = 1000000, .aka = "overlong_buffer_len",
                 .doc = "DAPO's overlong shaping: the last this many tokens before "
                        "explorer.max_tokens cost up to overlong_penalty; 0: off"),
    TERN_SETTING(.name = "overlong_penalty", .type = TERN_SETTING_FLOAT, .def = "1.0", .min = 0,
                 .max = 1e6, .aka = "overlong_penalty_factor",
                 .doc = "overlong shaping: the reward lost by a response of max_tokens"),
    TERN_SETTINGS_END,
};

const tern_setting_spec tern_eval_keys[] = {
    TERN_SETTING(.name = "every", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = BIG,
                 .aka = "interval|eval_every",
                 .doc = "evaluate every this many RL steps (always before RL and at the end)"),
    TERN_SETTING(.name = "max_tokens", .type = TERN_SETTING_INT, .def = "16", .min = 1,
                 .max = 1e6, .doc = "greedy response tokens at most"),
    TERN_SETTING(.name = "limit", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = BIG,
                 .doc = "evaluate the first this many eval tasks; 0: all"),
    TERN_SETTINGS_END,
};

const tern_setting_spec tern_ranks_keys[] = {
    TERN_SETTING(.name = "trainers", .type = TERN_SETTING_INT, .def = "1", .min = 1,
                 .max = 4096, .aka = "trainer_ranks|trainer_workers",
                 .doc = "data-parallel trainer ranks (ranks 1 .. trainers), each training on "
                        "its share of every step's groups; the model needs the gradients op"),
    TERN_SETTING(.name = "explorers", .type = TERN_SETTING_INT, .def = "0", .min = 0,
                 .max = 4096, .aka = "explorer_ranks|rollout_workers",
                 .doc = "explorer ranks (rollout workers) after the master (rank 0) and the "
                        "trainer ranks; 0: every rank after those but the reward ranks"),
    TERN_SETTING(.name = "rewards", .type = TERN_SETTING_INT, .def = "0", .min = 0,
                 .max = 4096, .aka = "reward_ranks|reward_workers",
                 .doc = "reward-worker ranks, the last ranks: the master sends them the "
                        "responses to score, split between them; 0: the master scores"),
    TERN_SETTINGS_END,
};

/* The workflow section (docs/agents.md, "Workflows"). No key has a default
 * in the schema: a group whose keys have defaults is created in every
 * config (schema.c), and a run has a workflow only when its config says so;
 * read_workflow applies them. */
const tern_setting_spec tern_workflow_keys[] = {
    TERN_SETTING(.name = "command", .type = TERN_SETTING_STRINGS, .aka = "cmd|program|argv",
                 .doc = "the program run for each trajectory, as its words: [\"python3\", "
                        "\"agent.py\"] (run in the config's folder, the task on its stdin, "
                        "OPENAI_BASE_URL its trajectory's endpoint)"),
    TERN_SETTING(.name = "concurrency", .type = TERN_SETTING_INT, .min = 1,
                 .max = TERN_WORKFLOW_MAX_CONCURRENCY, .aka = "parallel|workers|jobs",
                 .doc = "programs running at once, their calls decoded together (default 16)"),
    TERN_SETTING(.name = "timeout_s", .type = TERN_SETTING_FLOAT, .min = 0.1, .max = 86400,
                 .aka = "timeout|time_limit",
                 .doc = "seconds one trajectory's program may run; then it is killed and the "
                        "trajectory fails (timeout; default 600)"),
    TERN_SETTING(.name = "max_calls", .type = TERN_SETTING_INT, .min = 1,
                 .max = TERN_ENV_MAX_TURNS, .aka = "max_turns|turns",
                 .doc = "model calls of one trajectory at most; more are refused with HTTP 429 "
                        "(default 16)"),
    TERN_SETTINGS_END,
};

/* ---- reading ------------------------------------------------------------- */

static config_setting_t *section(tern_config *c, const char *name)
{
    config_setting_t *root = config_root_setting(&c->cfg);
    config_setting_t *g = config_setting_get_member(root, name);
    if (!g)
        g = config_setting_add(root, name, CONFIG_TYPE_GROUP);
    return g;
}

static long long get_int(config_setting_t *g, const char *path)
{
    config_setting_t *s = tern_config_lookup(g, path);
    return s ? config_setting_get_int64(s) : 0;
}

static double get_float(config_setting_t *g, const char *path)
{
    config_setting_t *s = tern_config_lookup(g, path);
    if (!s)
        return 0;
    int t = config_setting_type(s);
    return t == CONFIG_TYPE_FLOAT ? config_setting_get_float(s)
                                  : (double)config_setting_get_int64(s);
}

static const char *get_string(config_setting_t *g, const char *path)
{
    config_setting_t *s = tern_config_lookup(g, path);
    return s ? config_setting_get_string(s) : NULL;
}

static int get_bool(config_setting_t *g, const char *path)
{
    config_setting_t *s = tern_config_lookup(g, path);
    return s ? config_setting_get_bool(s) : 0;
}

/* `p` taken from the config file's directory unless absolute. */
static char *resolve_path(const tern_config *c, const char *p)
{
    if (!p)
        return NULL;
    char *full = NULL;
    if (p[0] == '/' || !c->path || !strchr(c->path, '/'))
        return strdup(p);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", c->path);
    if (asprintf(&full, "%s/%s", dirname(dir), p) < 0)
        return NULL;
    return full;
}

size_t tern_run_data_files_check(const tern_config *c, tern_diag *d)
{
    static const char *const keys[] = {"data.train", "data.eval"};
    size_t added = 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        config_setting_t *st = tern_config_lookup(config_root_setting(&c->cfg), keys[i]);
        const char *given = st ? config_setting_get_string(st) : NULL;
        if (!given || !*given)
            continue;
        char *path = resolve_path(c, given);
        if (!path || access(path, R_OK) == 0) {
            free(path);
            continue;
        }
        int e = errno;
        char where[600], cwd[PATH_MAX], that[PATH_MAX + 16] = "";
        if (path[0] != '/' && getcwd(cwd, sizeof cwd))
            snprintf(that, sizeof that, "that is %s/%s; ", cwd, path);
        tern_diag_addf(d, "%s: %s = \"%s\": %s: cannot open: %s (%sa relative path is taken "
                       "from the config's folder, out_dir from the working directory: "
                       "docs/config.md)", tern_config_where(c, st, where, sizeof where), keys[i],
                       given, path, strerror(e), that);
        free(path);
        added++;
    }
    return added;
}

/* The workflow section into s: its command (at least a program), where it
 * runs, how many at once, for how long. TERN_OK (problems in d), or
 * TERN_ENOMEM. */
static int read_workflow(tern_config *c, config_setting_t *wf, tern_run_settings *s,
                         tern_diag *d)
{
    char where[600];
    config_setting_t *cmd = tern_config_lookup(wf, "command");
    int n = cmd ? config_setting_length(cmd) : 0;
    s->has_workflow = 1;
    if (n < 1 || n > TERN_WORKFLOW_MAX_ARGS) {
        tern_diag_addf(d, "%s: workflow.command must name the program and its arguments, "
                       "1 to %d words: command = [\"python3\", \"agent.py\"];%s",
                       tern_config_where(c, cmd ? cmd : wf, where, sizeof where),
                       TERN_WORKFLOW_MAX_ARGS, cmd ? "" : " (it is missing)");
        return TERN_OK;
    }
    if (!(s->workflow_command = calloc((size_t)n + 1, sizeof *s->workflow_command)))
        return TERN_ENOMEM;
    for (int i = 0; i < n; i++) {
        const char *w = config_setting_get_string_elem(cmd, i);
        if (!(s->workflow_command[i] = strdup(w ? w : "")))
            return TERN_ENOMEM;
    }
    if (!s->workflow_command[0][0])
        tern_diag_addf(d, "%s: workflow.command's first word is empty: it names the program",
                       tern_config_where(c, cmd, where, sizeof where));
    if (!(s->workflow_dir = resolve_path(c, ".")))
        return TERN_ENOMEM;
    s->workflow_concurrency = (uint32_t)get_int(wf, "concurrency");
    s->workflow_timeout_s = get_float(wf, "timeout_s");
    if (!s->workflow_concurrency)
        s->workflow_concurrency = 16;
    if (s->workflow_timeout_s <= 0)
        s->workflow_timeout_s = 600;
    return TERN_OK;
}

int tern_run_settings_read(tern_config *c, tern_run_settings *s, tern_diag *d)
{
    memset(s, 0, sizeof *s);
    size_t before = d->n;
    config_setting_t *g[6];
    const char *names[6] = {"data", "explorer", "trainer", "algorithm", "eval", "ranks"};
    const tern_setting_spec *const keys[6] = {tern_data_keys, tern_explorer_keys,
                                              tern_trainer_keys, tern_algorithm_keys,
                                              tern_eval_keys, tern_ranks_keys};
    for (int i = 0; i < 6; i++) {
        g[i] = section(c, names[i]);
        if (!g[i] || config_setting_type(g[i]) != CONFIG_TYPE_GROUP)
            return TERN_ECONFIG; /* the core schema reported the wrong type */
        tern_schema_check(c, g[i], &keys[i], 1, 0, d);
    }
    if (d->n > before)
        return TERN_ECONFIG;
    config_setting_t *data = g[0], *ex = g[1], *tr = g[2], *al = g[3], *ev = g[4], *rk = g[5];
    char where[600];

    const char *train = get_string(data, "train");
    if (!train || !*train) {
        tern_diag_addf(d, "%s: data.train: a run needs training tasks: set data.train to a "
                       "JSON Lines file (see docs/data.md; `tern data arith` makes one)",
                       tern_config_where(c, data, where, sizeof where));
        return TERN_ECONFIG;
    }
    s->train_path = resolve_path(c, train);
    const char *eval = get_string(data, "eval");
    s->eval_path = eval && *eval ? resolve_path(c, eval) : NULL;
    if (!s->train_path || (eval && *eval && !s->eval_path))
        return tern_errorf(TERN_ENOMEM, "out of memory");
    s->skip_bad = get_bool(data, "skip_bad");
    s->shuffle = get_bool(data, "shuffle");
    const char *sys = get_string(data, "system_prompt");
    if (sys && *sys && !(s->system_prompt = strdup(sys)))
        return tern_errorf(TERN_ENOMEM, "out of memory");

    config_setting_t *run = section(c, "run");
    config_setting_t *kg = tern_config_lookup(run, "keep_groups");
    config_setting_t *km = tern_config_lookup(run, "keep_mb");
    s->keep_groups = kg ? (uint32_t)config_setting_get_int64(kg) : 2;
    s->keep_bytes = (uint64_t)(km ? config_setting_get_int64(km) : 64) << 20;

    s->batch_tasks = (uint32_t)get_int(ex, "batch_tasks");
    s->group_size = (uint32_t)get_int(ex, "group_size");
    s->temperature = get_float(ex, "temperature");
    s->top_k = (int32_t)get_int(ex, "top_k");
    s->top_p = get_float(ex, "top_p");
    s->max_tokens = (uint32_t)get_int(ex, "max_tokens");
    s->waves = (uint32_t)get_int(ex, "waves");
    config_setting_t *root = config_root_setting(&c->cfg);
    config_setting_t *env = config_setting_get_member(root, "environment");
    config_setting_t *tools = config_setting_get_member(root, "tools");
    config_setting_t *tt = tern_config_lookup(ex, "tool_turns");
    config_setting_t *wf = config_setting_get_member(root, "workflow");
    if (wf && read_workflow(c, wf, s, d) != TERN_OK)
        return TERN_ENOMEM;
    if (wf && (env || (tools && config_setting_length(tools) > 0)))
        tern_diag_addf(d, "%s: a workflow's program is the agent: it talks to its own "
                       "environment and runs its own tools; remove the %s section (or the "
                       "workflow)", tern_config_where(c, wf, where, sizeof where),
                       env ? "environment" : "tools");
    s->has_environment = env != NULL;
    s->has_tools = tools && config_setting_length(tools) > 0;
    config_setting_t *mt = env ? tern_config_lookup(env, "max_turns") : NULL;
    config_setting_t *mc = wf ? tern_config_lookup(wf, "max_calls") : NULL;
    s->max_turns = wf ? (mc ? (uint32_t)config_setting_get_int64(mc) : 16)
                   : env ? (mt ? (uint32_t)config_setting_get_int64(mt) : 8)
                   : s->has_tools ? (tt ? (uint32_t)config_setting_get_int64(tt) : 4) : 1;
    if (tt && (env || !s->has_tools))
        tern_diag_addf(d, "%s: explorer.tool_turns bounds the turns of a run with tools and no "
                       "environment; %s", tern_config_where(c, tt, where, sizeof where),
                       env ? "with an environment its max_turns does: set environment.max_turns"
                           : "this run has no tools section: remove it");
    if (s->temperature == 0)
        tern_diag_addf(d, "%s: explorer.temperature = 0 samples greedily: every response of a "
                       "group would be the same and RL would learn nothing; use e.g. 1.0",
                       tern_config_where(c, tern_config_lookup(ex, "temperature"), where,
                                         sizeof where));

    s->steps = get_int(tr, "steps");
    s->lr = get_float(tr, "lr");
    const char *sched = get_string(tr, "lr_schedule");
    s->schedule = strcmp(sched, "cosine") == 0   ? TERN_LR_COSINE
                  : strcmp(sched, "linear") == 0 ? TERN_LR_LINEAR
                                                 : TERN_LR_CONSTANT;
    s->warmup_steps = get_int(tr, "warmup_steps");
    s->min_lr_ratio = get_float(tr, "min_lr_ratio");
    s->beta1 = get_float(tr, "beta1");
    s->beta2 = get_float(tr, "beta2");
    s->adam_eps = get_float(tr, "eps");
    s->weight_decay = get_float(tr, "weight_decay");
    s->grad_clip = get_float(tr, "grad_clip");
    s->save_every = get_int(tr, "save_every");
    s->keep_checkpoints = get_int(tr, "keep_checkpoints");
    s->score_always = strcmp(get_string(tr, "score_pass"), "always") == 0;
    s->mini_batches = (uint32_t)get_int(tr, "mini_batches");
    s->epochs = (uint32_t)get_int(tr, "epochs");
    if (s->mini_batches > s->batch_tasks)
        tern_diag_addf(d, "%s: trainer.mini_batches = %u is more than explorer.batch_tasks = %u: "
                       "a mini-batch holds whole groups (the responses of one task), so "
                       "mini_batches <= batch_tasks (e.g. 4 with 16)",
                       tern_config_where(c, tern_config_lookup(tr, "mini_batches"), where,
                                         sizeof where), s->mini_batches, s->batch_tasks);
    s->sft_steps = get_int(tr, "sft.steps");
    s->sft_batch_tasks = (uint32_t)get_int(tr, "sft.batch_tasks");
    s->sft_lr = get_float(tr, "sft.lr");

    s->adv.kind = tern_adv_kind_parse(get_string(al, "advantage"));
    s->adv.std_normalize = get_bool(al, "std_normalize");
    s->adv.std_sample = strcmp(get_string(al, "std"), "sample") == 0;
    s->adv.eps = 1e-6;
    s->adv.length_coef = get_float(al, "length_coef");
    s->adv.overlong_buffer = (uint32_t)get_int(al, "overlong_buffer");
    s->adv.overlong_penalty = get_float(al, "overlong_penalty");
    s->adv.max_tokens = s->max_tokens;
    if (s->adv.overlong_buffer > s->max_tokens)
        tern_diag_addf(d, "%s: algorithm.overlong_buffer = %u is longer than explorer.max_tokens "
                       "= %u: the penalty zone is the last overlong_buffer tokens before "
                       "max_tokens, so overlong_buffer <= max_tokens (e.g. max_tokens / 4)",
                       tern_config_where(c, tern_config_lookup(al, "overlong_buffer"), where,
                                         sizeof where), s->adv.overlong_buffer, s->max_tokens);
    s->filter_groups = get_bool(al, "filter_groups");
    s->filter_max_batches = (uint32_t)get_int(al, "filter_max_batches");
    s->loss.kind = tern_loss_kind_parse(get_string(al, "loss"));
    s->loss.agg = tern_loss_agg_parse(get_string(al, "aggregation"));
    s->loss.clip_low = get_float(al, "clip");
    s->loss.clip_high = tern_config_lookup(al, "clip_high") ? get_float(al, "clip_high")
                                                            : s->loss.clip_low;
    if (s->loss.clip_high < s->loss.clip_low)
        tern_diag_addf(d, "%s: algorithm.clip_high = %g is below clip = %g: clip-higher (DAPO) "
                       "widens the upper bound, so clip_high >= clip (e.g. 0.28 with 0.2)",
                       tern_config_where(c, tern_config_lookup(al, "clip_high"), where,
                                         sizeof where), s->loss.clip_high, s->loss.clip_low);
    /* Dr. GRPO's constant: the most tokens the model samples in one
     * trajectory (docs/algorithms.md, "Masks") */
    s->loss.norm_len = (double)s->max_tokens * (double)s->max_turns;
    s->loss.off_policy = (tern_off_policy)tern_off_policy_parse(get_string(al, "off_policy"));
    s->loss.tis_cap = get_float(al, "tis_cap");
    if (s->loss.off_policy != TERN_OFF_POLICY_NONE && s->loss.kind != TERN_LOSS_PPO)
        tern_diag_addf(d, "%s: algorithm.off_policy = \"%s\" corrects the ppo loss only: set "
                       "loss = \"ppo\", or off_policy = \"none\"",
                       tern_config_where(c, tern_config_lookup(al, "off_policy"), where,
                                         sizeof where), get_string(al, "off_policy"));
    if (s->loss.off_policy != TERN_OFF_POLICY_NONE && (uint64_t)s->mini_batches * s->epochs > 1)
        tern_diag_addf(d, "%s: algorithm.off_policy = \"%s\" with %u updates a step "
                       "(trainer.mini_batches x epochs): its weights compare the trainer at the "
                       "step's start with the explorer, and tern does not keep that policy "
                       "apart across updates yet; set off_policy = \"none\" (the ppo clip then "
                       "bounds each update), or one update a step",
                       tern_config_where(c, tern_config_lookup(al, "off_policy"), where,
                                         sizeof where), get_string(al, "off_policy"),
                       s->mini_batches * s->epochs);
    s->loss.dual_clip = get_float(al, "dual_clip");
    config_setting_t *dc = tern_config_lookup(al, "dual_clip");
    if (s->loss.dual_clip != 0 && s->loss.dual_clip <= 1)
        tern_diag_addf(d, "%s: algorithm.dual_clip: %g must be 0 (off) or greater than 1 "
                       "(3 is usual)", tern_config_where(c, dc, where, sizeof where),
                       s->loss.dual_clip);
    s->loss.kl = (tern_kl_estimator)tern_kl_estimator_parse(get_string(al, "kl.estimator"));
    s->loss.kl_coef = get_float(al, "kl.coef");
    s->kl_placement =
        strcmp(get_string(al, "kl.placement"), "reward") == 0 ? TERN_KL_IN_REWARD : TERN_KL_IN_LOSS;
    s->loss.kl_in_loss = s->kl_placement == TERN_KL_IN_LOSS;
    s->loss.entropy_coef = get_float(al, "entropy_coef");
    s->loss.kimi_tau = get_float(al, "kimi_tau");
    if (s->adv.kind == TERN_ADV_RLOO && s->group_size < 2)
        tern_diag_addf(d, "%s: algorithm.advantage = \"rloo\" needs explorer.group_size >= 2 "
                       "(it is %u): raise group_size or use grpo",
                       tern_config_where(c, tern_config_lookup(al, "advantage"), where,
                                         sizeof where), s->group_size);
    if (s->loss.kl_coef > 0 && s->loss.kl == TERN_KL_NONE)
        tern_diag_addf(d, "%s: algorithm.kl.coef is %g but the estimator is \"none\": choose "
                       "k1, k2 or k3, or set coef = 0",
                       tern_config_where(c, tern_config_lookup(al, "kl.coef"), where,
                                         sizeof where), s->loss.kl_coef);

    s->eval_every = get_int(ev, "every");
    s->eval_max_tokens = (uint32_t)get_int(ev, "max_tokens");
    s->eval_limit = get_int(ev, "limit");
    s->rank_trainers = (uint32_t)get_int(rk, "trainers");
    s->rank_explorers = (uint32_t)get_int(rk, "explorers");
    s->rank_rewards = (uint32_t)get_int(rk, "rewards");
    return d->n > before ? TERN_ECONFIG : TERN_OK;
}

void tern_run_settings_free(tern_run_settings *s)
{
    free(s->train_path);
    free(s->eval_path);
    free(s->system_prompt);
    for (size_t i = 0; s->workflow_command && s->workflow_command[i]; i++)
        free(s->workflow_command[i]);
    free(s->workflow_command);
    free(s->workflow_dir);
    memset(s, 0, sizeof *s);
}

double tern_run_lr(const tern_run_settings *s, int64_t step)
{
    /* linear warm-up from lr / warmup to lr, then the decay over the rest */
    if (step < s->warmup_steps)
        return s->lr * (double)(step + 1) / (double)s->warmup_steps;
    double floor = s->lr * s->min_lr_ratio;
    int64_t span = s->steps - s->warmup_steps;
    double frac = span > 1 ? (double)(step - s->warmup_steps) / (double)(span - 1) : 1.0;
    if (frac > 1)
        frac = 1;
    switch (s->schedule) {
    case TERN_LR_LINEAR: return s->lr - (s->lr - floor) * frac;
    case TERN_LR_COSINE: return floor + 0.5 * (s->lr - floor) * (1 + cos(M_PI * frac));
    default: return s->lr;
    }
}
