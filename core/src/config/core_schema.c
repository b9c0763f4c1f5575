/* core_schema.c: the core's config schema (see core_schema.h and docs/config.md). */
#include "config/core_schema.h"

#include "config/run_settings.h"
#include "tern/environment.h"
#include "tern/tool.h"

static const tern_setting_spec run_keys[] = {
    TERN_SETTING(.name = "name", .type = TERN_SETTING_STRING, .def = "\"run\"",
                 .doc = "the run's name: its directory is out_dir/name"),
    TERN_SETTING(.name = "seed", .type = TERN_SETTING_INT, .def = "1", .min = 0,
                 .max = 9007199254740992.0, .aka = "random_seed|rng_seed",
                 .doc = "seed of every random stream in the run"),
    TERN_SETTING(.name = "out_dir", .type = TERN_SETTING_STRING, .def = "\"runs\"",
                 .aka = "output_dir|outdir|dir",
                 .doc = "directory that holds run directories (relative to the working directory)"),
    TERN_SETTING(.name = "log_level", .type = TERN_SETTING_STRING, .def = "\"info\"",
                 .choices = "error|warn|info|debug", .aka = "verbosity|loglevel",
                 .doc = "least severe log lines shown and written to log.txt"),
    TERN_SETTING(.name = "keep_groups", .type = TERN_SETTING_INT, .def = "2", .min = 0,
                 .max = 65536, .doc = "groups of each RL step whose every response, with the "
                 "task's prompt, rollouts.jsonl keeps (the others keep their first response)"),
    TERN_SETTING(.name = "keep_mb", .type = TERN_SETTING_INT, .def = "64", .min = 0,
                 .max = 1048576, .doc = "MiB at most that rollouts.jsonl and eval_responses.jsonl "
                 "each grow to with the responses kept; past it they keep no more (0: none)"),
    TERN_SETTINGS_END,
};

/* Keys the core owns in a model slot (model, reference). */
static const tern_setting_spec model_slot_keys[] = {
    TERN_SETTING(.name = "plugin", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_REQUIRED,
                 .doc = "name of the model plugin (see `tern plugins`)"),
    TERN_SETTINGS_END,
};

static const tern_setting_spec reference_slot_keys[] = {
    TERN_SETTING(.name = "plugin", .type = TERN_SETTING_STRING,
                 .doc = "model plugin of the frozen reference (omit with same_as)"),
    TERN_SETTING(.name = "same_as", .type = TERN_SETTING_STRING, .choices = "model",
                 .doc = "\"model\": the reference is a frozen copy of the initial policy"),
    TERN_SETTINGS_END,
};

static const tern_setting_spec plugin_slot_keys[] = {
    TERN_SETTING(.name = "plugin", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_REQUIRED,
                 .doc = "name of the plugin (see `tern plugins`)"),
    TERN_SETTINGS_END,
};

/* Keys the core owns in the environment slot (docs/agents.md). */
static const tern_setting_spec environment_slot_keys[] = {
    TERN_SETTING(.name = "plugin", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_REQUIRED,
                 .doc = "name of the environment plugin (see `tern plugins`)"),
    TERN_SETTING(.name = "max_turns", .type = TERN_SETTING_INT, .def = "8", .min = 1,
                 .max = TERN_ENV_MAX_TURNS, .aka = "turns|max_steps",
                 .doc = "the model's turns in one trajectory at most; then it ends, unfinished"),
    TERN_SETTINGS_END,
};

/* Keys the core owns in a tool slot (docs/agents.md, "Tools"). */
static const tern_setting_spec tool_slot_keys[] = {
    TERN_SETTING(.name = "plugin", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_REQUIRED,
                 .doc = "name of the tool plugin (see `tern plugins`)"),
    TERN_SETTING(.name = "output_max", .type = TERN_SETTING_INT, .def = "2048", .min = 16,
                 .max = TERN_TOOL_OUTPUT_MAX, .aka = "max_output|output_limit",
                 .doc = "bytes of a call's output the model sees at most; the rest is cut, "
                        "and the model told so"),
    TERN_SETTINGS_END,
};

static const tern_setting_spec reward_slot_keys[] = {
    TERN_SETTING(.name = "plugin", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_REQUIRED,
                 .doc = "name of the reward plugin (see `tern plugins`)"),
    TERN_SETTING(.name = "domain", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_REQUIRED,
                 .doc = "tasks whose `domain` field equals this are scored by this plugin"),
    TERN_SETTING(.name = "weight", .type = TERN_SETTING_FLOAT, .def = "1.0", .min = 0,
                 .max = 1e6, .doc = "weight of this reward in the domain's weighted sum"),
    TERN_SETTING(.name = "isolate", .type = TERN_SETTING_BOOL, .def = "false",
                 .doc = "run the plugin in a supervised worker process: a crash or hang costs "
                        "one response, and the worker is restarted"),
    TERN_SETTING(.name = "timeout_ms", .type = TERN_SETTING_INT, .min = 1, .max = 86400000,
                 .doc = "with isolate: the longest one response may take (default 10000)"),
    TERN_SETTING(.name = "watchdog_s", .type = TERN_SETTING_FLOAT, .def = "60", .min = 0,
                 .max = 86400, .doc = "in process (without isolate): warn, naming the plugin, "
                 "when one call has run this many seconds (it cannot be stopped there); 0: never"),
    TERN_SETTINGS_END,
};

const tern_setting_spec tern_core_schema[] = {
    TERN_SETTING(.name = "plugin_path", .type = TERN_SETTING_STRINGS,
                 .aka = "plugins_path|plugin_dirs|plugin_dir",
                 .doc = "directories searched for plugins before TERN_PLUGIN_PATH"),
    TERN_SETTING(.name = "run", .type = TERN_SETTING_GROUP, .children = run_keys,
                 .doc = "name, seed and output of the run"),
    TERN_SETTING(.name = "model", .type = TERN_SETTING_GROUP, .aka = "policy",
                 .doc = "the policy model plugin and its settings"),
    TERN_SETTING(.name = "reference", .type = TERN_SETTING_GROUP, .aka = "ref|ref_model",
                 .doc = "the frozen reference model"),
    TERN_SETTING(.name = "buffer", .type = TERN_SETTING_GROUP, .aka = "replay|replay_buffer",
                 .doc = "the experience buffer plugin and its settings"),
    TERN_SETTING(.name = "sync", .type = TERN_SETTING_GROUP, .aka = "synchronization|schedule",
                 .doc = "the synchronisation strategy plugin and its settings"),
    TERN_SETTING(.name = "transport", .type = TERN_SETTING_GROUP, .aka = "weight_transport",
                 .doc = "a weight transport plugin (sync's method names it: nccl)"),
    TERN_SETTING(.name = "environment", .type = TERN_SETTING_GROUP, .aka = "env|environments",
                 .doc = "what the policy talks to for many turns: trajectories, not single "
                 "answers (docs/agents.md)"),
    TERN_SETTING(.name = "tools", .type = TERN_SETTING_LIST, .aka = "tool",
                 .doc = "functions the policy may call in its turns (docs/agents.md, \"Tools\")"),
    TERN_SETTING(.name = "workflow", .type = TERN_SETTING_GROUP, .children = tern_workflow_keys,
                 .aka = "agent|workflows",
                 .doc = "a program of yours runs each trajectory, calling the policy through "
                 "an OpenAI endpoint of its own (docs/agents.md, \"Workflows\")"),
    TERN_SETTING(.name = "rewards", .type = TERN_SETTING_LIST, .aka = "reward",
                 .doc = "reward plugins, each routed by task domain"),
    TERN_SETTING(.name = "data", .type = TERN_SETTING_GROUP, .children = tern_data_keys,
                 .aka = "dataset|tasks", .doc = "training and evaluation tasks"),
    TERN_SETTING(.name = "explorer", .type = TERN_SETTING_GROUP, .children = tern_explorer_keys,
                 .aka = "rollout|explorers", .doc = "how responses are generated"),
    TERN_SETTING(.name = "trainer", .type = TERN_SETTING_GROUP, .children = tern_trainer_keys,
                 .aka = "training|optimizer", .doc = "steps, optimiser and checkpoints"),
    TERN_SETTING(.name = "algorithm", .type = TERN_SETTING_GROUP, .children = tern_algorithm_keys,
                 .aka = "algo|rl", .doc = "advantages and the policy loss"),
    TERN_SETTING(.name = "eval", .type = TERN_SETTING_GROUP, .children = tern_eval_keys,
                 .aka = "evaluation", .doc = "greedy evaluation on the eval split"),
    TERN_SETTING(.name = "ranks", .type = TERN_SETTING_GROUP, .children = tern_ranks_keys,
                 .aka = "mpi|layout", .doc = "which MPI rank runs which role (mpirun -np N)"),
    TERN_SETTINGS_END,
};

const tern_slot_def tern_slots[] = {
    {"model", TERN_KIND_MODEL, 0, model_slot_keys},
    {"reference", TERN_KIND_MODEL, 0, reference_slot_keys},
    {"buffer", TERN_KIND_BUFFER, 0, plugin_slot_keys},
    {"sync", TERN_KIND_SYNC, 0, plugin_slot_keys},
    {"transport", TERN_KIND_TRANSPORT, 0, plugin_slot_keys},
    {"rewards", TERN_KIND_REWARD, 1, reward_slot_keys},
    {"environment", TERN_KIND_ENVIRONMENT, 0, environment_slot_keys},
    {"tools", TERN_KIND_TOOL, 1, tool_slot_keys},
};
const size_t tern_n_slots = sizeof tern_slots / sizeof tern_slots[0];

const char *tern_kind_name(uint32_t kind)
{
    switch (kind) {
    case TERN_KIND_MODEL: return "model";
    case TERN_KIND_REWARD: return "reward";
    case TERN_KIND_BUFFER: return "buffer";
    case TERN_KIND_SYNC: return "sync";
    case TERN_KIND_TRANSPORT: return "transport";
    case TERN_KIND_ENVIRONMENT: return "environment";
    case TERN_KIND_TOOL: return "tool";
    default: return "unknown";
    }
}
