/* run_checks.c: the checks a run makes before it creates anything (see
 * run_checks.h). */
#include "loop/run_checks.h"
#include "loop/trajectories.h"
#include "loop/ranks.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/errmsg.h"
#include "base/log.h"
#include "data/task.h"
#include "image/task_image.h"
#include "loop/master_state.h"
#include "loop/run.h"
#include "reward/rewarder.h"

tern_instance *tern_run_instance(tern_session *s, const char *label)
{
    for (size_t i = 0; i < s->n_inst; i++)
        if (strcmp(s->inst[i].label, label) == 0)
            return &s->inst[i];
    return NULL;
}

/* started, or waiting for the run directory to start in */
static int live(const tern_instance *in) { return in && (in->created || in->waits_for_run_dir); }

int tern_run_check_buffer_empty(const tern_run *run)
{
    tern_session *s = run->session;
    tern_instance *buf = tern_run_instance(s, "buffer");
    tern_buffer_stats bst = {.size = sizeof bst};
    if (run->resuming || !buf || !run->buffer_ops ||
        run->buffer_ops->stats(run->buffer, &bst) != TERN_OK || bst.held == 0)
        return TERN_OK;
    /* a durable buffer with groups of an earlier run: a new run deals its
     * own batches, and would take the old groups for them */
    char where[600];
    return tern_errorf(TERN_ECONFIG, "%s: buffer: plugin '%s' already holds %llu group%s from "
                       "an earlier run: continue that run with `tern run CONFIG --resume` "
                       "(it trains them), or remove the buffer's file (or point its path "
                       "elsewhere) to start a new one",
                       tern_config_where(&s->config, buf->group, where, sizeof where),
                       buf->entry->name, (unsigned long long)bst.held, bst.held == 1 ? "" : "s");
}

/* What an environment needs of the policy: a chat template (the turns are
 * chat turns) whose rendering of a user turn after an assistant's is the
 * same whatever came before (prefix-stable), so that observations are
 * appended token for token (loop/trajectories.c). */
static int check_environment(tern_run *run)
{
    if (!tern_model_has_chat(&run->policy))
        return tern_errorf(TERN_ECONFIG, "%s: environment: plugin '%s' talks to the policy in "
                           "chat turns, but the model plugin has no chat template (encode_chat): "
                           "use a chat model (e.g. SmolLM2-135M-Instruct), or remove the "
                           "environment section", run->session->config.path, run->env_plugin);
    int32_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    int rc = tern_observation_tokens(&run->policy, run->special.eos, NULL, "2 + 2?", &a, &na);
    if (rc == TERN_OK)
        rc = tern_observation_tokens(&run->policy, run->special.eos, "Be brief.", "2 + 2?", &b,
                                     &nb);
    if (rc == TERN_OK && (na != nb || memcmp(a, b, na * sizeof *a) != 0))
        rc = tern_errorf(TERN_EUNSUPPORTED, "the model's chat template renders a user turn "
                         "differently when a system turn came first (it is not prefix-stable), "
                         "so observations cannot be appended token for token");
    free(a);
    free(b);
    if (rc != TERN_OK)
        return tern_errorf(TERN_ECONFIG, "%s: environment: plugin '%s' talks to the policy in "
                           "chat turns, but the model's chat template cannot append them (%s); "
                           "use a chat model whose template appends turns (ChatML: Qwen2.5, "
                           "SmolLM2; Llama 3), or remove the environment section "
                           "(docs/agents.md, \"Templates\")", run->session->config.path,
                           run->env_plugin, tern_error_message());
    return TERN_OK;
}

/* What a workflow needs (docs/agents.md, "Workflows"): its program, found
 * where it will run, and a chat model (its programs call the chat API). */
static int check_workflow(tern_run *run)
{
    const tern_run_settings *set = &run->set;
    const char *path = run->session->config.path;
    size_t at = 0;
    for (size_t i = 0; set->workflow_command[i] && at + 2 < sizeof run->workflow_name; i++)
        at += (size_t)snprintf(run->workflow_name + at, sizeof run->workflow_name - at, "%s%s",
                               i ? " " : "", set->workflow_command[i]);
    if (!tern_model_has_chat(&run->policy))
        return tern_errorf(TERN_ECONFIG, "%s: workflow: its programs call the policy's chat "
                           "API, but the model plugin has no chat template (encode_chat): use a "
                           "chat model (e.g. SmolLM2-135M-Instruct)", path);
    const char *prog = set->workflow_command[0];
    char full[PATH_MAX];
    int found = 0;
    if (strchr(prog, '/')) {
        snprintf(full, sizeof full, "%s%s%s", prog[0] == '/' ? "" : set->workflow_dir,
                 prog[0] == '/' ? "" : "/", prog);
        found = access(full, X_OK) == 0;
    } else {
        const char *p = getenv("PATH");
        for (p = p ? p : "/usr/bin:/bin"; !found && *p;) {
            size_t len = strcspn(p, ":");
            snprintf(full, sizeof full, "%.*s/%s", (int)len, len ? p : ".", prog);
            found = access(full, X_OK) == 0;
            p += len + (p[len] == ':');
        }
    }
    if (!found)
        return tern_errorf(TERN_ECONFIG, "%s: workflow.command: '%s' is not a program that can "
                           "run (%s): name one on PATH (\"python3\") or a file relative to the "
                           "config's folder %s, executable", path, prog,
                           strchr(prog, '/') ? "no executable file there" : "not on PATH",
                           set->workflow_dir);
    return TERN_OK;
}

/* The tools section's plugins (docs/agents.md, "Tools"), opened into
 * run->tools: the policy's template must render tool turns, appended token
 * for token; a template without a tool block gets tern's in the system
 * turn. */
static int check_tools(tern_run *run)
{
    tern_toolbox_env env = {.ops = run->env_ops, .state = run->env, .plugin = run->env_plugin,
                            .thread_safe = run->env_thread_safe, .lock = &run->env_lock};
    int rc = tern_toolbox_open(&run->tools, run->session, run->env_ops ? &env : NULL);
    if (rc != TERN_OK || run->tools.n == 0)
        return rc;
    const char *path = run->session->config.path;
    if (!tern_model_has_chat_json(&run->policy))
        return tern_errorf(TERN_ECONFIG, "%s: tools: the model plugin cannot render tools and "
                           "tool turns with its chat template (encode_chat_json, ABI 1.14): use "
                           "the transformer model with a chat model, or remove the tools "
                           "section", path);
    const char *one = "[{\"role\":\"user\",\"content\":\"x\"}]";
    int32_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    rc = tern_model_chat_json(&run->policy, "tools: the chat template", one, NULL, &a, &na);
    if (rc == TERN_OK)
        rc = tern_model_chat_json(&run->policy, "tools: the chat template with the tools", one,
                                  run->tools.schemas, &b, &nb);
    if (rc == TERN_OK && na == nb && memcmp(a, b, na * sizeof *a) == 0)
        rc = tern_toolbox_make_system_block(&run->tools);
    free(a), free(b);
    a = b = NULL;
    const char *name = run->tools.tool[0].name, *output = "42";
    if (rc == TERN_OK)
        rc = tern_tool_turn_tokens(&run->policy, run->special.eos, NULL, &name, &output, 1, &a,
                                   &na);
    if (rc == TERN_OK)
        rc = tern_tool_turn_tokens(&run->policy, run->special.eos, "Be brief.", &name, &output,
                                   1, &b, &nb);
    if (rc == TERN_OK && (na != nb || memcmp(a, b, na * sizeof *a) != 0))
        rc = tern_errorf(TERN_EUNSUPPORTED, "the model's chat template renders a tool turn "
                         "differently when a system turn came first (it is not prefix-stable)");
    free(a), free(b);
    if (rc != TERN_OK && rc != TERN_ENOMEM)
        return tern_errorf(TERN_ECONFIG, "%s: tools: the model's chat template cannot describe "
                           "the tools or append their answers as tool turns (%s); use a chat "
                           "model whose template renders tool turns (ChatML: Qwen2.5, SmolLM2; "
                           "Llama 3.1), or remove the tools section (docs/agents.md, "
                           "\"Tools\")", path, tern_error_message());
    if (rc == TERN_OK)
        tern_logf(TERN_LOG_INFO, "tools", "%zu tool%s (first: %s), described %s", run->tools.n,
                  run->tools.n == 1 ? "" : "s", name,
                  run->tools.system_block ? "by tern in the system turn (the model's template "
                                            "has no tool block)"
                                          : "by the model's template");
    return rc;
}

/* The plugins a run needs and what it asks of them; fills in run's plugin
 * fields. Config problems to d. */
static int check_plugins(tern_run *run, tern_diag *d)
{
    tern_session *s = run->session;
    tern_instance *model = tern_run_instance(s, "model"), *ref = tern_run_instance(s, "reference"),
                  *buf = tern_run_instance(s, "buffer"), *sync = tern_run_instance(s, "sync");
    const char *fix = " (etc/quickstart.cfg shows a complete run)";
    if (!live(model))
        tern_diag_addf(d, "%s: a run needs a model section: model = { plugin = \"transformer\"; "
                       "init = { preset = \"tiny\"; }; };%s", s->config.path, fix);
    if (!live(buf))
        tern_diag_addf(d, "%s: a run needs a buffer section: buffer = { plugin = \"fifo\"; };%s",
                       s->config.path, fix);
    if (!live(sync))
        tern_diag_addf(d, "%s: a run needs a sync section: sync = { plugin = \"synchronous\"; "
                       "};%s", s->config.path, fix);
    if (d->n)
        return TERN_ECONFIG;
    /* a model or sync plugin never waits: only buffers may (host/loader.c) */
    run->policy = (tern_model){.ops = model->entry->plugin->desc->ops, .state = model->state};
    tern_model_name(&run->policy, "model", model->entry->name, model->entry->path,
                    model->entry->plugin->desc->abi_minor);
    if (buf->created) {
        run->buffer_ops = buf->entry->plugin->desc->ops;
        run->buffer = buf->state;
    }
    run->buffer_plugin = buf->entry->name;
    run->buffer_path = buf->entry->path;
    run->sync_ops = sync->entry->plugin->desc->ops;
    run->sync = sync->state;
    run->sync_plugin = sync->entry->name;
    run->sync_path = sync->entry->path;
    tern_instance *env = tern_run_instance(s, "environment");
    if (live(env)) {
        run->env_ops = env->entry->plugin->desc->ops;
        run->env = env->state;
        run->env_plugin = env->entry->name;
        run->env_thread_safe = (env->entry->plugin->desc->caps & TERN_CAP_THREAD_SAFE) != 0;
        pthread_mutex_init(&run->env_lock, NULL);
    }

    char where[600];
    if (tern_run_check_buffer_empty(run) != TERN_OK) {
        tern_diag_addf(d, "%s", tern_error_message());
        return TERN_ECONFIG;
    }

    int rc = tern_model_special(&run->policy, "model: the end-of-sequence token", &run->special);
    if (rc == TERN_EUNSUPPORTED) {
        tern_diag_addf(d, "model: plugin '%s' does not tell its end-of-sequence token (the "
                       "special_tokens op of ABI 1.1), so a run cannot end responses: add the op "
                       "and rebuild the plugin against the ABI 1.1 SDK (docs/plugins.md)",
                       model->entry->name);
        return TERN_ECONFIG;
    }
    if (rc != TERN_OK || run->special.eos < 0)
        return tern_errorf(TERN_ERR, "model: plugin '%s' gives no end-of-sequence token: %s",
                           model->entry->name, rc != TERN_OK ? tern_error_message() : "eos is -1");

    /* whether the policy reads images: every rank needs it (the explorers
     * and trainers attach them); the tasks are checked against it later */
    run->image_op = TERN_HAS(run->policy.ops, image_spec) && run->policy.ops->image_spec;
    rc = tern_model_image_spec(&run->policy, "model: image_spec", &run->image_spec);
    if (rc != TERN_OK && rc != TERN_EUNSUPPORTED)
        return rc;
    run->reads_images = rc == TERN_OK;

    tern_sync_info info = {.size = sizeof info};
    tern_error_clear();
    if (run->sync_ops->describe(run->sync, &info) != TERN_OK)
        return tern_errorf(TERN_ERR, "sync: describe failed: %s", tern_error_message());
    if (info.explorers < 1 || info.explorers > 64)
        tern_diag_addf(d, "%s: sync: plugin '%s' asks for %u explorers; tern runs 1 to 64",
                       tern_config_where(&s->config, sync->group, where, sizeof where),
                       sync->entry->name, info.explorers);
    tern_instance *tp = tern_run_instance(s, "transport");
    int core_transport = info.transport && (strcmp(info.transport, "memory") == 0 ||
                                            strcmp(info.transport, "checkpoint") == 0 ||
                                            strcmp(info.transport, "mpi") == 0);
    if (!info.transport || !info.transport[0])
        tern_diag_addf(d, "%s: sync: plugin '%s' names no weight transport (a bug in it)",
                       tern_config_where(&s->config, sync->group, where, sizeof where),
                       sync->entry->name);
    else if (!core_transport && !live(tp))
        tern_diag_addf(d, "%s: sync: weight transport \"%s\" is not one of tern's own "
                       "(memory, mpi, checkpoint): a transport plugin brings it; add "
                       "transport = { plugin = \"%s\"; }; (docs/sync.md \"Weight transports\")",
                       tern_config_where(&s->config, sync->group, where, sizeof where),
                       info.transport, info.transport);
    else if (!core_transport && strcmp(info.transport, tp->entry->name) != 0)
        tern_diag_addf(d, "%s: sync: method \"%s\" does not name the transport plugin '%s' of "
                       "the transport section: set method = \"%s\", or remove the transport "
                       "section", tern_config_where(&s->config, sync->group, where, sizeof where),
                       info.transport, tp->entry->name, tp->entry->name);
    else if (core_transport && live(tp))
        tern_diag_addf(d, "%s: transport: plugin '%s' is configured but sync's method is \"%s\": "
                       "set method = \"%s\" in sync to use it, or remove the transport section",
                       tern_config_where(&s->config, tp->group, where, sizeof where),
                       tp->entry->name, info.transport, tp->entry->name);
    else if (!core_transport && !run->ranks)
        tern_diag_addf(d, "%s: sync: method \"%s\" moves weights between MPI ranks, and this "
                       "run is one process: launch it on ranks (mpirun -np 3 tern run ..., "
                       "docs/distributed.md), or use method = \"memory\" in one process",
                       tern_config_where(&s->config, sync->group, where, sizeof where),
                       info.transport);
    else if (!core_transport && model->created &&
             !tern_model_has_device_tensors(&(tern_model){
                 .ops = model->entry->plugin->desc->ops, .state = model->state}))
        tern_diag_addf(d, "%s: sync: method \"%s\" moves device tensors, and model plugin "
                       "'%s' computes in host memory (no device_tensors op, ABI 1.8): use a GPU "
                       "model (plugin = \"transformer_cuda\") or method = \"mpi\"",
                       tern_config_where(&s->config, sync->group, where, sizeof where),
                       info.transport, model->entry->name);
    else
        snprintf(run->transport, sizeof run->transport, "%s", info.transport);
    /* the memory of one process is not shared by ranks: across ranks weights
     * in memory go by MPI broadcast, and in one process "mpi" is memory */
    if (run->ranks && strcmp(run->transport, "memory") == 0)
        snprintf(run->transport, sizeof run->transport, "mpi");
    else if (!run->ranks && strcmp(run->transport, "mpi") == 0)
        snprintf(run->transport, sizeof run->transport, "memory");
    if (!core_transport && live(tp))
        run->transport_plugin = (tern_transport_plugin){
            .ops = tp->entry->plugin->desc->ops, .state = tp->state, .name = tp->entry->name};
    run->n_explorers = info.explorers;
    run->max_staleness = info.max_staleness;
    /* the first plan tells the kind of schedule: fixed (wait) or asynchronous */
    tern_sync_plan plan = {.size = sizeof plan};
    tern_error_clear();
    if (run->sync_ops->explorer_plan(run->sync, 0, 0, &plan) != TERN_OK)
        return tern_errorf(TERN_ERR, "sync: explorer_plan failed: %s", tern_error_message());
    run->async = plan.mode == TERN_SYNC_USE_NEWEST;
    /* an off-policy correction on batches that are never stale weighs only
     * the generate-vs-score rounding: allowed, but said */
    if (run->set.loss.off_policy != TERN_OFF_POLICY_NONE && !run->async &&
        run->max_staleness == 0) {
        config_setting_t *op = tern_config_lookup(config_root_setting(&s->config.cfg),
                                                  "algorithm.off_policy");
        tern_logf(TERN_LOG_WARN, "run", "%s: algorithm.off_policy = \"%s\" on a run whose "
                  "batches are never stale (sync plugin '%s', max_staleness 0): it corrects "
                  "only the explorer's and the trainer's rounding; it is meant for one_step_off, "
                  "fully_async and multi_explorer",
                  tern_config_where(&s->config, op, where, sizeof where),
                  run->set.loss.off_policy == TERN_OFF_POLICY_TIS ? "tis" : "decoupled",
                  sync->entry->name);
    }

    /* the reference: a frozen copy of the policy (same_as), its own plugin, or none */
    int want_kl = run->set.loss.kl != TERN_KL_NONE;
    if (ref && ref->created) {
        run->reference = (tern_model){.ops = ref->entry->plugin->desc->ops, .state = ref->state};
        tern_model_name(&run->reference, "reference", ref->entry->name, ref->entry->path,
                        ref->entry->plugin->desc->abi_minor);
    } else if (ref && want_kl) {
        run->reference_is_copy = 1;
    } else if (!ref && run->set.loss.kl_coef > 0) {
        config_setting_t *kl = tern_config_lookup(config_root_setting(&s->config.cfg),
                                                  "algorithm.kl.coef");
        tern_diag_addf(d, "%s: algorithm.kl.coef = %g needs a reference model: add reference "
                       "= { same_as = \"model\"; }; (or set coef = 0)",
                       tern_config_where(&s->config, kl, where, sizeof where),
                       run->set.loss.kl_coef);
    }
    return d->n ? TERN_ECONFIG : TERN_OK;
}

/* The warm-up learns from the training tasks' answers: run->answered lists
 * the tasks that have one (tern_task_has_answer), which the master deals
 * it; a warm-up asked for with none is refused at its line. */
static int check_warmup_answers(tern_run *run, tern_diag *d)
{
    free(run->answered);
    run->n_answered = 0;
    if (!(run->answered = calloc(run->train.n ? run->train.n : 1, sizeof *run->answered)))
        return tern_errorf(TERN_ENOMEM, "out of memory");
    for (size_t i = 0; i < run->train.n; i++)
        if (tern_task_has_answer(run->train.tasks[i]))
            run->answered[run->n_answered++] = (uint32_t)i;
    if (run->set.sft_steps <= 0 || run->n_answered > 0)
        return TERN_OK;
    tern_session *s = run->session;
    char where[512];
    config_setting_t *st = tern_config_lookup(config_root_setting(&s->config.cfg),
                                              "trainer.sft.steps");
    tern_diag_addf(d, "%s: trainer.sft.steps = %lld, but no task of data.train (%s) has an "
                   "answer (each \"answer\" is \"\"): the warm-up learns from the answers. "
                   "Add them to the tasks, or set trainer.sft.steps = 0",
                   tern_config_where(&s->config, st, where, sizeof where),
                   (long long)run->set.sft_steps, run->set.train_path);
    return TERN_ECONFIG;
}

/* Whether task t has an image: an "image" field that is not null. */
static int has_image(const tern_task *t)
{
    const char *type = tern_task_type(t, "image");
    return type && strcmp(type, "null") != 0;
}

/* A policy that reads no images and tasks with an image (the `image` field
 * `tern data shapes` writes and the vision reward reads): the policy would
 * answer a question about a picture it never gets, and RL could not learn.
 * Refused, naming the first five tasks, rather than run on the text alone. */
static int refuse_text_only(const tern_run *run, const tern_task_set *set, tern_diag *d)
{
    size_t with_image = 0;
    for (size_t i = 0; i < set->n; i++) {
        const tern_task *t = set->tasks[i];
        if (!has_image(t))
            continue;
        if (with_image++ < 5) {
            char id[128];
            const char *path = tern_task_string(t, "image");
            tern_diag_addf(d, "%s:%zu: task %s has an image (%s)", set->path, tern_task_line(t),
                           tern_task_id_text(t, id, sizeof id), path ? path : "not a path");
        }
    }
    if (with_image)
        tern_diag_addf(d, "%s: %zu task%s an image, and model plugin '%s' reads text only (%s): "
                       "it would answer without seeing the picture; use a model that reads "
                       "images (docs/data.md, \"Images\"), or train on tasks without an "
                       "\"image\" field", set->path, with_image,
                       with_image == 1 ? " has" : "s have", run->policy.plugin,
                       run->image_op ? "its image_spec op says this model has no image encoder"
                                     : "no image_spec op, ABI 1.12");
    return with_image ? TERN_ECONFIG : TERN_OK;
}

/* The last image read by check_task_image: tasks about one picture (as
 * `tern data shapes` writes them) are neighbours, and it is read once. */
typedef struct image_seen {
    char *path;   /* NULL: none yet */
    int rc;       /* tern_image_load's status */
    char why[600]; /* its message when it failed */
    int32_t width, height;
} image_seen;

/* One task of `set` against the model's image spec: its "image" field, the
 * file (read, decoded), its size when the fit is exact, and the
 * placeholders of its prompt and system turn. Each problem is one line in
 * d, counted in *bad (only the first five are written). TERN_OK (problems
 * or not) or TERN_ENOMEM. */
static int check_task_image(const tern_run *run, const tern_task_set *set, const tern_task *t,
                            image_seen *seen, size_t *bad, tern_diag *d)
{
    const tern_image_spec *sp = &run->image_spec;
    char id[128], where[700];
    snprintf(where, sizeof where, "%s:%zu: task %s", set->path, tern_task_line(t),
             tern_task_id_text(t, id, sizeof id));
    char *path = NULL;
    int rc = tern_task_image_path(t, &path);
    if (rc == TERN_ENOMEM)
        return rc;
    if (rc != TERN_OK) {
        if ((*bad)++ < 5)
            tern_diag_addf(d, "%s: %s; give the image's path, relative to the tasks file's "
                           "folder", where, tern_error_message());
        return TERN_OK;
    }
    /* the placeholders the prompt will hold: its own, else the one a run
     * puts before it (tern_run_prompt) */
    const char *prompt = tern_task_string(t, "prompt"); /* a number holds none */
    size_t marks = tern_placeholder_count(prompt, sp->placeholder) +
                   tern_placeholder_count(tern_task_system(run, t), sp->placeholder);
    size_t images = path ? 1 : 0;
    if (images && marks == 0)
        marks = 1;
    if (marks > images && (*bad)++ < 5)
        tern_diag_addf(d, "%s: the prompt and system turn hold %zu image placeholder%s (\"%s\") "
                       "and the task has %s: each placeholder stands for one image; %s", where,
                       marks, marks == 1 ? "" : "s", sp->placeholder,
                       images ? "1 image" : "no \"image\"",
                       images ? "keep one (or none: a run puts one before the prompt)"
                              : "give the image's path in \"image\", or remove the placeholder");
    if (images > sp->max_images && (*bad)++ < 5)
        tern_diag_addf(d, "%s: %zu images, and model plugin '%s' takes at most %u per prompt",
                       where, images, run->policy.plugin, sp->max_images);
    if (!path)
        return TERN_OK;
    if (!seen->path || strcmp(seen->path, path) != 0) {
        free(seen->path);
        seen->path = path;
        path = NULL;
        tern_loaded_image img;
        seen->rc = tern_image_load(seen->path, &img);
        if (seen->rc == TERN_ENOMEM)
            return seen->rc;
        snprintf(seen->why, sizeof seen->why, "%s", seen->rc ? tern_error_message() : "");
        seen->width = img.image.width;
        seen->height = img.image.height;
        tern_image_unload(&img); /* the pixels are not kept for the run */
    }
    free(path);
    const char *given = tern_task_string(t, "image");
    if (seen->rc != TERN_OK) {
        /* the message starts with the path read: said once, beside the one given */
        size_t k = strlen(seen->path);
        const char *why = seen->why;
        if (strncmp(why, seen->path, k) == 0 && strncmp(why + k, ": ", 2) == 0)
            why += k + 2;
        char read_as[PATH_MAX + 8] = "";
        if (strcmp(given, seen->path) != 0)
            snprintf(read_as, sizeof read_as, " (%s)", seen->path);
        if ((*bad)++ < 5)
            tern_diag_addf(d, "%s: image \"%s\"%s: %s; %s", where, given, read_as, why,
                           seen->rc == TERN_EINVAL
                               ? "give a PNG or PPM/PGM image the model can read"
                               : "check the path, which is relative to the tasks file's folder");
        return TERN_OK;
    }
    if (sp->fit == TERN_IMAGE_FIT_EXACT &&
        (seen->width != sp->width || seen->height != sp->height) && (*bad)++ < 5)
        tern_diag_addf(d, "%s: image \"%s\" is %dx%d, and model plugin '%s' takes %dx%d images "
                       "only (its encoder's size): resize the image, or set the model's "
                       "image_fit = \"resize\" to have the model resize it", where, given,
                       seen->width, seen->height, run->policy.plugin, sp->width, sp->height);
    return TERN_OK;
}

/* The reference scores the policy's sequences, image tokens and images
 * included (the KL term): a reference of its own plugin must read images
 * the same way. */
static int check_reference_images(const tern_run *run, const tern_task_set *set, tern_diag *d)
{
    if (!run->reference.ops || run->reference_is_copy)
        return TERN_OK;
    size_t with_image = 0;
    for (size_t i = 0; i < set->n && !with_image; i++)
        with_image = has_image(set->tasks[i]);
    if (!with_image)
        return TERN_OK;
    tern_image_spec rs;
    int rc = tern_model_image_spec(&run->reference, "reference: image_spec", &rs);
    if (rc != TERN_OK && rc != TERN_EUNSUPPORTED)
        return rc;
    if (rc == TERN_OK && strcmp(rs.placeholder, run->image_spec.placeholder) == 0 &&
        rs.tokens_per_image == run->image_spec.tokens_per_image)
        return TERN_OK;
    tern_diag_addf(d, "%s: tasks have images, and the reference (plugin '%s') %s: the KL term "
                   "scores the policy's image prompts under it; use reference = { same_as = "
                   "\"model\"; }, or a reference that reads images as the policy does",
                   set->path, run->reference.plugin ? run->reference.plugin : "?",
                   rc == TERN_OK ? "marks images otherwise than the policy (its placeholder or "
                                   "tokens_per_image differ)"
                                 : "reads text only");
    return TERN_ECONFIG;
}

/* The tasks of `set` that have an image (docs/data.md, "Images"): refused
 * for a text-only policy; else each one's image read and decoded (once per
 * file, not kept) and checked against the policy's image_spec, and every
 * task's placeholders counted, before anything runs. */
static int check_images(const tern_run *run, const tern_task_set *set, tern_diag *d)
{
    if (!run->reads_images)
        return refuse_text_only(run, set, d);
    image_seen seen = {0};
    size_t bad = 0;
    int rc = TERN_OK;
    for (size_t i = 0; i < set->n && rc == TERN_OK; i++)
        rc = check_task_image(run, set, set->tasks[i], &seen, &bad, d);
    free(seen.path);
    if (rc != TERN_OK)
        return rc;
    if (bad > 5)
        tern_diag_addf(d, "%s: %zu problems in all with the tasks' images and placeholders",
                       set->path, bad);
    if (set == &run->train && (rc = check_reference_images(run, set, d)) != TERN_OK)
        return rc;
    return bad ? TERN_ECONFIG : TERN_OK;
}

int tern_run_check(tern_run *run, tern_diag *d)
{
    int rc = tern_run_settings_read(&run->session->config, &run->set, d);
    if (rc == TERN_OK)
        rc = tern_run_load_data(run);
    if (rc == TERN_OK)
        rc = check_warmup_answers(run, d);
    if (rc == TERN_OK)
        rc = check_plugins(run, d);
    if (rc == TERN_OK)
        rc = check_tools(run);
    if (rc == TERN_OK && run->set.has_workflow)
        rc = check_workflow(run);
    /* a worker rank neither rewards nor reads prompts: the master checks those */
    if (rc != TERN_OK || (run->ranks && run->ranks->role != TERN_RANK_MASTER))
        return rc;
    if (rc == TERN_OK)
        rc = tern_rewarder_open(&run->rewards, run->session);
    /* with an environment (or a workflow) its rewards are the trajectories':
     * a rewards section may add to them, and need not score every domain */
    int own_rewards = run->env_ops || run->set.has_workflow;
    if (rc == TERN_OK && run->env_ops)
        rc = check_environment(run);
    if (rc == TERN_OK && !own_rewards)
        rc = tern_rewarder_check_domains(&run->rewards, &run->train);
    if (rc == TERN_OK && run->eval.n && !own_rewards)
        rc = tern_rewarder_check_domains(&run->rewards, &run->eval);
    if (rc == TERN_OK) {
        rc = check_images(run, &run->train, d);
        int erc = check_images(run, &run->eval, d);
        if (rc == TERN_OK)
            rc = erc;
    }
    if (rc == TERN_OK) {
        const char *mark = tern_run_placeholder(run, 1);
        rc = tern_check_prompt_lengths(&run->policy, run->set.system_prompt, mark, &run->train,
                                       d);
        int erc = rc == TERN_OK || rc == TERN_ECONFIG
                      ? tern_check_prompt_lengths(&run->policy, run->set.system_prompt, mark,
                                                  &run->eval, d)
                      : TERN_OK;
        if (rc == TERN_OK)
            rc = erc;
    }
    return rc;
}

void tern_run_check_free(tern_run *run)
{
    if (run->env_ops)
        pthread_mutex_destroy(&run->env_lock);
    run->env_ops = NULL;
    tern_toolbox_close(&run->tools);
    tern_failure_log_close(&run->failures);
    tern_rewarder_close(&run->rewards);
    free(run->answered);
    run->answered = NULL;
    run->n_answered = 0;
    tern_task_set_free(&run->train);
    tern_task_set_free(&run->eval);
    tern_run_settings_free(&run->set);
}

int tern_check_prompt_lengths(const tern_model *m, const char *system_prompt,
                              const char *placeholder, const tern_task_set *set, tern_diag *d)
{
    tern_special_tokens sp;
    int rc = tern_model_special(m, "model: the context length", &sp);
    if (rc == TERN_EUNSUPPORTED || (rc == TERN_OK && sp.context_len <= 0))
        return TERN_OK; /* the model does not say: its own op refuses at run time */
    if (rc != TERN_OK)
        return rc;
    size_t too_long = 0;
    for (size_t i = 0; i < set->n; i++) {
        const tern_task *t = set->tasks[i];
        /* the prompt as the master deals it: strings as they are, numbers as JSON */
        const char *text = tern_task_string(t, "prompt");
        char *owned = text ? NULL : tern_task_json(t, "prompt");
        if (!text && !owned)
            return tern_errorf(TERN_ENOMEM, "out of memory");
        const char *system = tern_task_string(t, "system");
        int32_t *ids = NULL;
        size_t n = 0;
        /* an image's placeholder counts as the tokens the model expands it to */
        rc = tern_run_prompt(m, "check", system ? system : system_prompt, text ? text : owned,
                             has_image(t) ? placeholder : NULL, &ids, &n);
        free(owned);
        free(ids);
        if (rc != TERN_OK)
            return rc;
        if (n < (size_t)sp.context_len)
            continue;
        if (too_long++ < 5) {
            char id[128];
            tern_diag_addf(d, "%s:%zu: task %s: the prompt is %zu tokens as the model formats "
                           "it; the model's context holds %d, prompt and response together: "
                           "shorten the prompt, or use a model with a longer context",
                           set->path, tern_task_line(t), tern_task_id_text(t, id, sizeof id), n,
                           sp.context_len);
        }
    }
    if (too_long > 5)
        tern_diag_addf(d, "%s: %zu tasks in all have a prompt too long for the model's context "
                       "of %d tokens", set->path, too_long, sp.context_len);
    return too_long ? TERN_ECONFIG : TERN_OK;
}
