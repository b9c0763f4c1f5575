/* main.c: the `tern` command. It parses argv and calls libtern; everything
 * else (and every message about a config or plugin) lives in libtern. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tern/libtern.h"

typedef struct command {
    const char *name;
    const char *usage;
    const char *help;
} command;

static const command commands[] = {
    {"run", "tern run CONFIG [--resume] [-o section.key=value]...",
     "Check CONFIG, start every plugin it names, create the run directory\n"
     "out_dir/name/ (name-2, name-3, ... if taken) and train: the optional\n"
     "supervised warm-up, then RL steps, with greedy evaluation before RL,\n"
     "every eval.every steps and at the end. The directory gets config.cfg\n"
     "(every value in force), log.txt, metrics.jsonl (a line per step),\n"
     "rollouts.jsonl (a line per task trained on), checkpoints/, summary.json\n"
     "and trace.json. The run directory's path is printed at the end.\n"
     "  --resume  continue out_dir/name from its newest checkpoint\n"
     "-o overrides a setting, typed as in the file (-o run.seed=2,\n"
     "-o run.name=\"try2\", -o trainer.steps=50); repeat it as needed.\n"
     "^C finishes the current step, writes a checkpoint and exits 130;\n"
     "a second ^C exits at once.\n"
     "Exit: 0 done, 1 runtime failure, 2 bad usage/config/plugin, 130 interrupted."},
    {"check", "tern check CONFIG [-o section.key=value]...",
     "Read and validate CONFIG, load and start every plugin it names, print\n"
     "what would run, and stop. Every problem is printed as FILE:LINE: message.\n"
     "Exit: 0 valid, 2 invalid (1 if a plugin failed for a runtime reason)."},
    {"plugins", "tern plugins [--config CONFIG]",
     "List every plugin on the search path (name, kind, version, ABI, file),\n"
     "then every file that was refused and why. The search path is: the\n"
     "config's plugin_path (with --config), $TERN_PLUGIN_PATH, the per-user\n"
     "directory ($XDG_DATA_HOME/tern/plugins/abi-1, default\n"
     "~/.local/share/tern/plugins/abi-1), then the build tree's or installed\n"
     "tern/abi-1 directory beside libtern."},
    {"new-plugin", "tern new-plugin KIND NAME [DIR]",
     "Write a ready-to-build plugin project to DIR (default ./NAME): NAME.c, a\n"
     "complete KIND plugin whose every op does something simple (replace the\n"
     "marked parts with your logic), CMakeLists.txt (find_package(Tern) and a\n"
     "test that runs `tern check test.cfg`), test.cfg and README.md. Then:\n"
     "cd DIR && cmake -S . -B build && cmake --build build && ctest --test-dir build\n"
     "KIND is model, reward, buffer or sync. NAME is the plugin's name: a\n"
     "lower-case letter, then lower-case letters, digits or '_' (at most 64).\n"
     "DIR must not exist or be empty: nothing is ever overwritten.\n"
     "Exit: 0 written, 1 a file could not be written, 2 bad usage."},
    {"model", "tern model init --preset NAME [--seed S] [--plugin P] OUT_DIR",
     "Create a fresh model from the preset NAME of a model plugin and save it to\n"
     "OUT_DIR, a Hugging Face-shaped directory (config.json, weights, tokenizer)\n"
     "that `tern generate`, `tern score` and configs (model.path) load.\n"
     "  --preset NAME  a size the plugin offers (transformer: tiny or bench)\n"
     "  --seed S       seed of the initial weights (default: the plugin's)\n"
     "  --plugin P     the model plugin (default transformer; see `tern plugins`)\n"
     "OUT_DIR must not exist (it is created, parents too) or be empty: nothing\n"
     "is ever overwritten.\n"
     "Exit: 0 written, 1 runtime failure, 2 bad usage, preset, plugin or OUT_DIR."},
    {"generate", "tern generate MODEL_DIR --prompt TEXT [options]",
     "Load the model saved in MODEL_DIR, tokenize TEXT (with BOS) and print a\n"
     "continuation: the bytes the model gives, as they are, and a newline.\n"
     "  --max-tokens N    new tokens at most (default 64)\n"
     "  --temperature T   sampling temperature; 0 is greedy (default 1.0)\n"
     "  --top-k K         sample from the K likeliest tokens; 0 is off (default)\n"
     "  --top-p P         sample from the likeliest tokens holding mass P, in\n"
     "                    (0, 1]; 1 is off (default)\n"
     "  --seed S          same seed and options, same output (default 1)\n"
     "  --samples K       draw K continuations (default 1); with K > 1 each\n"
     "                    follows a line \"--- sample I (N tokens, logprob L) ---\"\n"
     "  --stop-token ID   end a sample at token ID, which it keeps; repeat for\n"
     "                    more. None by default: a sample runs to --max-tokens\n"
     "                    (give the model's EOS id to stop there)\n"
     "  --chat            TEXT is a user turn: format it with the model's chat\n"
     "                    template (model.chat_template, docs/models.md) and end\n"
     "                    a sample at the end of the assistant's turn too\n"
     "  --system TEXT     with --chat: a system turn before it\n"
     "  --plugin P        the model plugin (default transformer)\n"
     "  --threads N       threads of the model (default: the plugin's)\n"
     "Exit: 0 done, 1 runtime failure, 2 bad usage, MODEL_DIR, plugin or prompt."},
    {"score", "tern score MODEL_DIR --text TEXT [--plugin P] [--threads N]",
     "Load the model saved in MODEL_DIR, tokenize TEXT (with BOS) and print\n"
     "one line per token after BOS:\n"
     "  POSITION<TAB>ID<TAB>TOKEN<TAB>LOGPROB<TAB>ENTROPY\n"
     "TOKEN is the token's text with \\n, \\t, \\\\ and \\xNN (other control\n"
     "bytes and bytes that are not UTF-8) escaped; LOGPROB is log p(token |\n"
     "the tokens before it) and ENTROPY that distribution's entropy, in nats.\n"
     "Then: total logprob X over N tokens, perplexity Y  (Y = exp(-X/N)).\n"
     "  --plugin P   the model plugin (default transformer)\n"
     "  --threads N  threads of the model (default: the plugin's)\n"
     "Exit: 0 done, 1 runtime failure, 2 bad usage, MODEL_DIR, plugin or text."},
    {"data", "tern data arith [--seed S] [--train N] [--eval M] [--max K] [--ops OPS] OUT_DIR\n"
             "  tern data shapes [--seed S] [--n N] [--size PX] OUT_DIR",
     "Write the synthetic arithmetic tasks of the quickstart to\n"
     "OUT_DIR/arith-train.jsonl and OUT_DIR/arith-eval.jsonl, one JSON task per\n"
     "line ({\"id\":\"arith-train-00001\",\"domain\":\"math\",\"prompt\":\"37+45=\",\n"
     "\"answer\":\"82\"}). No problem repeats, and none of eval is in train.\n"
     "  --seed S   same seed and options, same files (default 1)\n"
     "  --train N  training tasks (default 2000)\n"
     "  --eval M   evaluation tasks, held out from training (default 200)\n"
     "  --max K    operands are drawn from 0..K (default 49)\n"
     "  --ops OPS  the operations, some of + - * (default +; quote it: '+-*');\n"
     "             a - b only with a >= b, so no answer is negative\n"
     "N + M must not exceed the distinct problems (for + alone: (K+1)^2).\n"
     "OUT_DIR is created if missing (parents too); an existing file is never\n"
     "overwritten. The task format: docs/data.md.\n"
     "shapes: write N pictures of a few coloured shapes, OUT_DIR/images/\n"
     "shape-00001.png ..., and OUT_DIR/shapes.jsonl with four vision tasks each\n"
     "(count_regions, color_at, grounding, counting; domain \"vision\", judged\n"
     "by the vision reward, which finds the images beside the tasks file).\n"
     "  --seed S   same seed and options, same files (default 1)\n"
     "  --n N      pictures, 1 to 100000 (default 100)\n"
     "  --size PX  width and height in pixels, 32 to 1024 (default 64)\n"
     "No file is ever overwritten. The pictures and tasks: docs/data.md.\n"
     "Exit: 0 written, 1 a file could not be written, 2 bad usage or a file exists."},
    {"timeline", "tern timeline RUN_DIR [-o FILE] [--steps N] [--from S --to S] [--width PX]",
     "Draw the run's trace.json as a timeline (SVG): a lane per explorer, the\n"
     "buffer and the trainer; rollouts (yellow) and train steps (green) with\n"
     "their batch numbers, weight syncs (purple: memory or NCCL, red:\n"
     "checkpoint), waits (grey), each batch's time in the buffer, publishes and\n"
     "stale skips; a time axis in seconds and a legend. RUN_DIR may also be\n"
     "the trace.json itself. The output's path is printed.\n"
     "  -o FILE       where to write (default RUN_DIR/timeline.svg; - for stdout)\n"
     "  --steps N     end at the end of the trainer's N-th train step (0..N-1);\n"
     "                long runs are easier to read a few steps at a time\n"
     "  --from S      start at S seconds (the axis' clock)\n"
     "  --to S        end at S seconds (not with --steps)\n"
     "  --width PX    picture width in pixels, 400 to 20000 (default 1200)\n"
     "The file is written whole or not at all. The picture: docs/timeline.md.\n"
     "Exit: 0 written, 1 the file could not be written, 2 bad usage or trace."},
    {"reward", "tern reward score --plugin NAME [-o key=value]... [--plugin-dir DIR] < CASES",
     "Score saved responses with one reward plugin. Each line of standard input\n"
     "is a task object with the response to score:\n"
     "  {\"answer\": \"42\", \"response\": \"... so \\\\boxed{42}\"}\n"
     "and gives one line on standard output, in the same order:\n"
     "  {\"reward\": 1.0, \"accuracy\": 1.0, \"format\": 1.0, \"reason\": \"...\"}\n"
     "with \"failed\": \"crash\" (or error, nonfinite, timeout, garbage, start)\n"
     "when the plugin gave no verdict. Blank lines give none; a line that is not\n"
     "a task with a \"response\" string gives {\"error\": \"...\"}.\n"
     "  --plugin NAME     the reward plugin (see `tern plugins`)\n"
     "  -o key=value      a setting of the plugin, typed as in a config file; a\n"
     "                    bare word is a string (-o answer_field=solution).\n"
     "                    -o isolate=true -o timeout_ms=2000 run it in a\n"
     "                    supervised worker process, as in a run\n"
     "  --plugin-dir DIR  search DIR for plugins first\n"
     "  --batch N         responses per call to the plugin (default 64)\n"
     "Rewards, their settings and examples: docs/rewards.md.\n"
     "Exit: 0 every line scored, 1 runtime failure, 2 bad usage, plugin,\n"
     "setting or input line."},
    {"version", "tern version", "Print the tern release and the plugin ABI version."},
    {"help", "tern help [COMMAND]", "Show the commands, or one command's help."},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void print_overview(FILE *f)
{
    fprintf(f, "tern %s: reinforcement fine-tuning for language models\n\nusage:\n",
            tern_version_string());
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %s\n", commands[i].usage);
    fprintf(f, "\n`tern help COMMAND` tells more. Docs: docs/config.md, docs/plugins.md.\n");
}

static int usage_error(const char *fmt, const char *arg, const char *cmd)
{
    fprintf(stderr, "tern: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    const command *c = cmd ? find_command(cmd) : NULL;
    if (c)
        fprintf(stderr, "usage: %s\n", c->usage);
    else
        fprintf(stderr, "run `tern help` for the commands\n");
    return TERN_EXIT_USAGE;
}

/* Parse "CONFIG [-o k=v]..." (and --config CONFIG for plugins) into inv. */
static int parse_args(int argc, char **argv, const char *cmd, int config_required,
                      tern_invocation *inv, const char **overrides)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-o") == 0 || strcmp(a, "--override") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s needs section.key=value", a, cmd);
            overrides[inv->n_overrides++] = argv[++i];
        } else if (strncmp(a, "-o", 2) == 0 && a[2]) {
            overrides[inv->n_overrides++] = a + 2;
        } else if (strcmp(a, "--resume") == 0 && strcmp(cmd, "run") == 0) {
            inv->resume = 1;
        } else if (strcmp(a, "--config") == 0 && !config_required) {
            if (i + 1 >= argc)
                return usage_error("%s needs a file", a, cmd);
            inv->config_path = argv[++i];
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            const command *c = find_command(cmd);
            printf("usage: %s\n\n%s\n", c->usage, c->help);
            return -1;
        } else if (a[0] == '-' && a[1]) {
            return usage_error("unknown option '%s'", a, cmd);
        } else if (config_required && !inv->config_path) {
            inv->config_path = a;
        } else {
            return usage_error("unexpected argument '%s'", a, cmd);
        }
    }
    if (config_required && !inv->config_path)
        return usage_error("%s needs a config file", cmd, cmd);
    return 0;
}

/* `tern new-plugin KIND NAME [DIR]`: positional arguments only. */
static int new_plugin(int argc, char **argv)
{
    const char *pos[3] = {NULL, NULL, NULL};
    int n = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            const command *c = find_command("new-plugin");
            printf("usage: %s\n\n%s\n", c->usage, c->help);
            return TERN_EXIT_OK;
        }
        if (a[0] == '-' && a[1])
            return usage_error("unknown option '%s'", a, "new-plugin");
        if (n == 3)
            return usage_error("unexpected argument '%s'", a, "new-plugin");
        pos[n++] = a;
    }
    if (n < 2)
        return usage_error("%s needs KIND and NAME", "new-plugin", "new-plugin");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_new_plugin(&inv, pos[0], pos[1], pos[2]);
}

/* ---- model commands: flags with values -------------------------------- */

static int usage_errorf(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int usage_errorf(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tern: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    const command *c = find_command(cmd);
    if (c)
        fprintf(stderr, "usage: %s\n", c->usage);
    return TERN_EXIT_USAGE;
}

static int print_help(const char *cmd)
{
    const command *c = find_command(cmd);
    printf("usage: %s\n\n%s\n", c->usage, c->help);
    return TERN_EXIT_OK;
}

/* Whether argv[*i] is the flag `name`, as "--name VALUE" or "--name=VALUE":
 * 1 with *value set (and *i past VALUE), 0 if it is another argument, -1
 * (after the usage message) if VALUE is missing. */
static int flag_value(int argc, char **argv, int *i, const char *name, const char **value,
                      const char *cmd)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        usage_errorf(cmd, "%s needs a value", name);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

/* A whole number in [min, max] (decimal); else the usage message and -1. */
static int parse_whole(const char *cmd, const char *flag, const char *s, long long min,
                       long long max, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = s[0] == '-' || (s[0] >= '0' && s[0] <= '9') ? strtoll(s, &end, 10) : 0;
    if (!end || end == s || *end || errno || v < min || v > max) {
        if (max == LLONG_MAX)
            usage_errorf(cmd, "%s needs a whole number >= %lld (got '%s')", flag, min, s);
        else
            usage_errorf(cmd, "%s needs a whole number from %lld to %lld (got '%s')", flag, min,
                         max, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* A seed: any whole number from 0 to 2^64 - 1. */
static int parse_seed(const char *cmd, const char *flag, const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
    if (!end || *end || errno) {
        usage_errorf(cmd, "%s needs a whole number from 0 to 18446744073709551615 (got '%s')",
                     flag, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* A finite decimal number; the range is checked by the caller. */
static int parse_number(const char *s, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || s[0] == ' ' || s[0] == '\t')
        return -1;
    *out = v;
    return 0;
}

/* `tern model init --preset NAME [--seed S] [--plugin P] OUT_DIR` */
static int model_cmd(int argc, char **argv)
{
    const char *cmd = "model";
    if (argc < 1)
        return usage_errorf(cmd, "model needs a subcommand: init");
    if (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0)
        return print_help(cmd);
    if (strcmp(argv[0], "init") != 0)
        return usage_errorf(cmd, "unknown subcommand 'model %s' (there is: init)", argv[0]);
    const char *preset = NULL, *plugin = NULL, *out_dir = NULL, *v = NULL;
    long long seed = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int m;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return print_help(cmd);
        if ((m = flag_value(argc, argv, &i, "--preset", &v, cmd)) != 0) {
            if (m < 0)
                return TERN_EXIT_USAGE;
            preset = v;
        } else if ((m = flag_value(argc, argv, &i, "--seed", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--seed", v, 0, LLONG_MAX, &seed) != 0)
                return TERN_EXIT_USAGE;
        } else if ((m = flag_value(argc, argv, &i, "--plugin", &v, cmd)) != 0) {
            if (m < 0)
                return TERN_EXIT_USAGE;
            plugin = v;
        } else if (a[0] == '-' && a[1]) {
            return usage_errorf(cmd, "unknown option '%s'", a);
        } else if (out_dir) {
            return usage_errorf(cmd, "unexpected argument '%s'", a);
        } else {
            out_dir = a;
        }
    }
    if (!preset || !*preset)
        return usage_errorf(cmd, "model init needs --preset NAME");
    if (!out_dir || !*out_dir)
        return usage_errorf(cmd, "model init needs OUT_DIR, the directory to write");
    if (plugin && !*plugin)
        return usage_errorf(cmd, "--plugin needs a plugin name");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_model_init(&inv, plugin, preset, seed, out_dir);
}

/* `tern generate MODEL_DIR --prompt TEXT [options]` */
static int generate_cmd(int argc, char **argv)
{
    const char *cmd = "generate";
    tern_generate_args g = {.size = sizeof g, .max_tokens = 64, .samples = 1,
                            .temperature = 1.0, .top_p = 1.0, .seed = 1};
    int32_t *stop = calloc((size_t)argc + 1, sizeof *stop);
    if (!stop) {
        fprintf(stderr, "tern: out of memory\n");
        return TERN_EXIT_FAILURE;
    }
    const char *v = NULL;
    long long n = 0;
    int rc = -1; /* -1: go on; else the exit code */
    for (int i = 0; i < argc && rc < 0; i++) {
        const char *a = argv[i];
        int m;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            rc = print_help(cmd);
        } else if ((m = flag_value(argc, argv, &i, "--prompt", &v, cmd)) != 0) {
            if (m < 0)
                rc = TERN_EXIT_USAGE;
            g.prompt = v;
        } else if ((m = flag_value(argc, argv, &i, "--max-tokens", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--max-tokens", v, 1, UINT32_MAX, &n) != 0)
                rc = TERN_EXIT_USAGE;
            g.max_tokens = (uint32_t)n;
        } else if ((m = flag_value(argc, argv, &i, "--temperature", &v, cmd)) != 0) {
            if (m < 0)
                rc = TERN_EXIT_USAGE;
            else if (parse_number(v, &g.temperature) != 0 || g.temperature < 0)
                rc = usage_errorf(cmd, "--temperature needs a number >= 0, 0 for greedy (got "
                                  "'%s')", v);
        } else if ((m = flag_value(argc, argv, &i, "--top-k", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--top-k", v, 0, INT32_MAX, &n) != 0)
                rc = TERN_EXIT_USAGE;
            g.top_k = (int32_t)n;
        } else if ((m = flag_value(argc, argv, &i, "--top-p", &v, cmd)) != 0) {
            if (m < 0)
                rc = TERN_EXIT_USAGE;
            else if (parse_number(v, &g.top_p) != 0 || !(g.top_p > 0 && g.top_p <= 1))
                rc = usage_errorf(cmd, "--top-p needs a number in (0, 1], 1 for off (got "
                                  "'%s')", v);
        } else if ((m = flag_value(argc, argv, &i, "--seed", &v, cmd)) != 0) {
            if (m < 0 || parse_seed(cmd, "--seed", v, &g.seed) != 0)
                rc = TERN_EXIT_USAGE;
        } else if ((m = flag_value(argc, argv, &i, "--samples", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--samples", v, 1, UINT32_MAX, &n) != 0)
                rc = TERN_EXIT_USAGE;
            g.samples = (uint32_t)n;
        } else if ((m = flag_value(argc, argv, &i, "--stop-token", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--stop-token", v, 0, INT32_MAX, &n) != 0)
                rc = TERN_EXIT_USAGE;
            stop[g.n_stop++] = (int32_t)n;
        } else if ((m = flag_value(argc, argv, &i, "--plugin", &v, cmd)) != 0) {
            if (m < 0)
                rc = TERN_EXIT_USAGE;
            else if (!*v)
                rc = usage_errorf(cmd, "--plugin needs a plugin name");
            g.plugin = v;
        } else if ((m = flag_value(argc, argv, &i, "--threads", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--threads", v, 1, INT32_MAX, &n) != 0)
                rc = TERN_EXIT_USAGE;
            g.threads = (uint32_t)n;
        } else if (strcmp(a, "--chat") == 0) {
            g.chat = 1;
        } else if ((m = flag_value(argc, argv, &i, "--system", &v, cmd)) != 0) {
            if (m < 0)
                rc = TERN_EXIT_USAGE;
            g.system = v;
        } else if (a[0] == '-' && a[1]) {
            rc = usage_errorf(cmd, "unknown option '%s'", a);
        } else if (g.model_dir) {
            rc = usage_errorf(cmd, "unexpected argument '%s'", a);
        } else {
            g.model_dir = a;
        }
    }
    if (rc < 0 && !g.model_dir)
        rc = usage_errorf(cmd, "generate needs MODEL_DIR, the directory of a saved model");
    if (rc < 0 && !g.prompt)
        rc = usage_errorf(cmd, "generate needs --prompt TEXT");
    if (rc < 0 && g.system && !g.chat)
        rc = usage_errorf(cmd, "--system needs --chat (a system turn is part of a chat "
                          "template)");
    if (rc < 0) {
        g.prompt_len = strlen(g.prompt);
        g.stop = stop;
        tern_invocation inv = {.size = sizeof inv};
        rc = tern_cmd_generate(&inv, &g);
    }
    free(stop);
    return rc;
}

/* `tern score MODEL_DIR --text TEXT [--plugin P] [--threads N]` */
static int score_cmd(int argc, char **argv)
{
    const char *cmd = "score";
    tern_score_args sa = {.size = sizeof sa};
    const char *v = NULL;
    long long n = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int m;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return print_help(cmd);
        if ((m = flag_value(argc, argv, &i, "--text", &v, cmd)) != 0) {
            if (m < 0)
                return TERN_EXIT_USAGE;
            sa.text = v;
        } else if ((m = flag_value(argc, argv, &i, "--plugin", &v, cmd)) != 0) {
            if (m < 0)
                return TERN_EXIT_USAGE;
            if (!*v)
                return usage_errorf(cmd, "--plugin needs a plugin name");
            sa.plugin = v;
        } else if ((m = flag_value(argc, argv, &i, "--threads", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--threads", v, 1, INT32_MAX, &n) != 0)
                return TERN_EXIT_USAGE;
            sa.threads = (uint32_t)n;
        } else if (a[0] == '-' && a[1]) {
            return usage_errorf(cmd, "unknown option '%s'", a);
        } else if (sa.model_dir) {
            return usage_errorf(cmd, "unexpected argument '%s'", a);
        } else {
            sa.model_dir = a;
        }
    }
    if (!sa.model_dir)
        return usage_errorf(cmd, "score needs MODEL_DIR, the directory of a saved model");
    if (!sa.text)
        return usage_errorf(cmd, "score needs --text TEXT");
    sa.text_len = strlen(sa.text);
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_score(&inv, &sa);
}

/* `tern data shapes [--seed S] [--n N] [--size PX] OUT_DIR` (argv[0] is "shapes") */
static int data_shapes_cmd(int argc, char **argv, const char *cmd)
{
    tern_shapes_args sa = {.size = sizeof sa, .seed = 1, .n_images = 100, .size_px = 64};
    const char *v = NULL;
    long long n = 0;
    uint64_t seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int m;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return print_help(cmd);
        if ((m = flag_value(argc, argv, &i, "--seed", &v, cmd)) != 0) {
            if (m < 0 || parse_seed(cmd, "--seed", v, &seed) != 0)
                return TERN_EXIT_USAGE;
            sa.seed = seed;
        } else if ((m = flag_value(argc, argv, &i, "--n", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--n", v, 1, 100000, &n) != 0)
                return TERN_EXIT_USAGE;
            sa.n_images = (unsigned long long)n;
        } else if ((m = flag_value(argc, argv, &i, "--size", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--size", v, 32, 1024, &n) != 0)
                return TERN_EXIT_USAGE;
            sa.size_px = (int)n;
        } else if (a[0] == '-' && a[1]) {
            return usage_errorf(cmd, "unknown option '%s'", a);
        } else if (sa.out_dir) {
            return usage_errorf(cmd, "unexpected argument '%s'", a);
        } else {
            sa.out_dir = a;
        }
    }
    if (!sa.out_dir || !*sa.out_dir)
        return usage_errorf(cmd, "data shapes needs OUT_DIR, the directory to write the tasks "
                            "and images to");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_data_shapes(&inv, &sa);
}

/* `tern data arith [--seed S] [--train N] [--eval M] [--max K] [--ops OPS] OUT_DIR` */
static int data_cmd(int argc, char **argv)
{
    const char *cmd = "data";
    if (argc < 1)
        return usage_errorf(cmd, "data needs a subcommand: arith or shapes");
    if (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0)
        return print_help(cmd);
    if (strcmp(argv[0], "shapes") == 0)
        return data_shapes_cmd(argc, argv, cmd);
    if (strcmp(argv[0], "arith") != 0)
        return usage_errorf(cmd, "unknown subcommand 'data %s' (there are: arith, shapes)",
                            argv[0]);
    tern_arith_args da = {.size = sizeof da, .seed = 1, .n_train = 2000, .n_eval = 200,
                          .max_operand = 49, .ops = "+"};
    const char *v = NULL;
    long long n = 0;
    uint64_t seed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int m;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return print_help(cmd);
        if ((m = flag_value(argc, argv, &i, "--seed", &v, cmd)) != 0) {
            if (m < 0 || parse_seed(cmd, "--seed", v, &seed) != 0)
                return TERN_EXIT_USAGE;
            da.seed = seed;
        } else if ((m = flag_value(argc, argv, &i, "--train", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--train", v, 1, LLONG_MAX, &n) != 0)
                return TERN_EXIT_USAGE;
            da.n_train = (unsigned long long)n;
        } else if ((m = flag_value(argc, argv, &i, "--eval", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--eval", v, 1, LLONG_MAX, &n) != 0)
                return TERN_EXIT_USAGE;
            da.n_eval = (unsigned long long)n;
        } else if ((m = flag_value(argc, argv, &i, "--max", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--max", v, 0, INT_MAX, &n) != 0)
                return TERN_EXIT_USAGE;
            da.max_operand = (int)n;
        } else if ((m = flag_value(argc, argv, &i, "--ops", &v, cmd)) != 0) {
            if (m < 0)
                return TERN_EXIT_USAGE;
            if (!*v)
                return usage_errorf(cmd, "--ops needs some of + - * (e.g. --ops '+-*')");
            da.ops = v;
        } else if (a[0] == '-' && a[1]) {
            return usage_errorf(cmd, "unknown option '%s'", a);
        } else if (da.out_dir) {
            return usage_errorf(cmd, "unexpected argument '%s'", a);
        } else {
            da.out_dir = a;
        }
    }
    if (!da.out_dir || !*da.out_dir)
        return usage_errorf(cmd, "data arith needs OUT_DIR, the directory to write the tasks to");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_data_arith(&inv, &da);
}

/* `tern reward score --plugin NAME [-o key=value]... [--plugin-dir DIR] [--batch N]` */
static int reward_cmd(int argc, char **argv)
{
    const char *cmd = "reward";
    if (argc < 1)
        return usage_errorf(cmd, "reward needs a subcommand: score");
    if (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0)
        return print_help(cmd);
    if (strcmp(argv[0], "score") != 0)
        return usage_errorf(cmd, "unknown subcommand 'reward %s' (there is: score)", argv[0]);
    const char **options = calloc((size_t)argc, sizeof *options);
    if (!options) {
        fprintf(stderr, "tern: out of memory\n");
        return TERN_EXIT_FAILURE;
    }
    tern_reward_score_args ra = {.size = sizeof ra, .options = options};
    const char *v = NULL;
    long long n = 0;
    int code = -1;
    for (int i = 1; i < argc && code < 0; i++) {
        const char *a = argv[i];
        int m;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            code = print_help(cmd);
        } else if ((m = flag_value(argc, argv, &i, "--plugin", &v, cmd)) != 0) {
            if (m < 0)
                code = TERN_EXIT_USAGE;
            else if (!*v)
                code = usage_errorf(cmd, "--plugin needs a plugin name");
            else
                ra.plugin = v;
        } else if ((m = flag_value(argc, argv, &i, "--plugin-dir", &v, cmd)) != 0) {
            if (m < 0)
                code = TERN_EXIT_USAGE;
            else
                ra.plugin_dir = v;
        } else if ((m = flag_value(argc, argv, &i, "--batch", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--batch", v, 1, 1000000, &n) != 0)
                code = TERN_EXIT_USAGE;
            else
                ra.batch = (size_t)n;
        } else if ((m = flag_value(argc, argv, &i, "-o", &v, cmd)) != 0) {
            if (m < 0)
                code = TERN_EXIT_USAGE;
            else
                options[ra.n_options++] = v;
        } else if (strncmp(a, "-o", 2) == 0 && a[2]) {
            options[ra.n_options++] = a + 2;
        } else if (a[0] == '-' && a[1]) {
            code = usage_errorf(cmd, "unknown option '%s'", a);
        } else {
            code = usage_errorf(cmd, "unexpected argument '%s' (the cases come on standard "
                                "input: tern reward score --plugin NAME < cases.jsonl)", a);
        }
    }
    if (code < 0 && !ra.plugin)
        code = usage_errorf(cmd, "reward score needs --plugin NAME (`tern plugins` lists the "
                            "reward plugins)");
    if (code < 0) {
        tern_invocation inv = {.size = sizeof inv};
        code = tern_cmd_reward_score(&inv, &ra);
    }
    free(options);
    return code;
}

/* A number of seconds >= 0 for --from / --to; else the usage message, -1. */
static int parse_seconds(const char *cmd, const char *flag, const char *s, double *out)
{
    if (parse_number(s, out) != 0 || *out < 0) {
        usage_errorf(cmd, "%s needs a number of seconds >= 0 (got '%s')", flag, s);
        return -1;
    }
    return 0;
}

/* `tern timeline RUN_DIR [-o FILE] [--steps N] [--from S] [--to S] [--width PX]` */
static int timeline_cmd(int argc, char **argv)
{
    const char *cmd = "timeline";
    tern_timeline_args ta = {.size = sizeof ta};
    const char *v = NULL;
    long long n = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int m;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return print_help(cmd);
        if ((m = flag_value(argc, argv, &i, "-o", &v, cmd)) != 0 ||
            (m = flag_value(argc, argv, &i, "--output", &v, cmd)) != 0) {
            if (m < 0)
                return TERN_EXIT_USAGE;
            if (!*v)
                return usage_errorf(cmd, "-o needs a file name (or - for stdout)");
            ta.out_path = v;
        } else if ((m = flag_value(argc, argv, &i, "--steps", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--steps", v, 1, LLONG_MAX, &n) != 0)
                return TERN_EXIT_USAGE;
            ta.steps = n;
        } else if ((m = flag_value(argc, argv, &i, "--from", &v, cmd)) != 0) {
            if (m < 0 || parse_seconds(cmd, "--from", v, &ta.from_s) != 0)
                return TERN_EXIT_USAGE;
            ta.has_from = 1;
        } else if ((m = flag_value(argc, argv, &i, "--to", &v, cmd)) != 0) {
            if (m < 0 || parse_seconds(cmd, "--to", v, &ta.to_s) != 0)
                return TERN_EXIT_USAGE;
            ta.has_to = 1;
        } else if ((m = flag_value(argc, argv, &i, "--width", &v, cmd)) != 0) {
            if (m < 0 || parse_whole(cmd, "--width", v, 400, 20000, &n) != 0)
                return TERN_EXIT_USAGE;
            ta.width = (int)n;
        } else if (a[0] == '-' && a[1]) {
            return usage_errorf(cmd, "unknown option '%s'", a);
        } else if (ta.run_dir) {
            return usage_errorf(cmd, "unexpected argument '%s'", a);
        } else {
            ta.run_dir = a;
        }
    }
    if (!ta.run_dir || !*ta.run_dir)
        return usage_errorf(cmd, "timeline needs RUN_DIR, a run directory (or its trace.json)");
    if (ta.has_from && ta.has_to && ta.from_s >= ta.to_s)
        return usage_errorf(cmd, "--from (%g) must be less than --to (%g)", ta.from_s, ta.to_s);
    if (ta.steps > 0 && ta.has_to)
        return usage_errorf(cmd, "--steps and --to both say where the picture ends: give one");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_timeline(&inv, &ta);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_overview(stderr);
        return TERN_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        print_overview(stdout);
        return TERN_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        if (argc > 2)
            return usage_error("unexpected argument '%s'", argv[2], "version");
        printf("tern %s (plugin ABI %d.%d)\n", tern_version_string(), TERN_ABI_MAJOR,
               TERN_ABI_MINOR);
        return TERN_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0) {
        if (argc == 2) {
            print_overview(stdout);
            return TERN_EXIT_OK;
        }
        const command *c = find_command(argv[2]);
        int model_init = argc == 4 && strcmp(argv[2], "model") == 0 &&
                         strcmp(argv[3], "init") == 0; /* `tern help model init` */
        if (!c || (argc > 3 && !model_init))
            return usage_error("no command '%s'", argv[2], NULL);
        printf("usage: %s\n\n%s\n", c->usage, c->help);
        return TERN_EXIT_OK;
    }
    const command *c = find_command(cmd);
    if (!c)
        return usage_error("unknown command '%s'", cmd, NULL);
    if (strcmp(cmd, "new-plugin") == 0)
        return new_plugin(argc - 2, argv + 2);
    if (strcmp(cmd, "model") == 0)
        return model_cmd(argc - 2, argv + 2);
    if (strcmp(cmd, "generate") == 0)
        return generate_cmd(argc - 2, argv + 2);
    if (strcmp(cmd, "score") == 0)
        return score_cmd(argc - 2, argv + 2);
    else if (strcmp(cmd, "data") == 0)
        return data_cmd(argc - 2, argv + 2);
    if (strcmp(cmd, "timeline") == 0)
        return timeline_cmd(argc - 2, argv + 2);
    if (strcmp(cmd, "reward") == 0)
        return reward_cmd(argc - 2, argv + 2);

    const char **overrides = calloc((size_t)argc, sizeof *overrides);
    if (!overrides) {
        fprintf(stderr, "tern: out of memory\n");
        return TERN_EXIT_FAILURE;
    }
    tern_invocation inv = {.size = sizeof inv, .overrides = overrides};
    int is_plugins = strcmp(cmd, "plugins") == 0;
    int rc = parse_args(argc - 2, argv + 2, cmd, !is_plugins, &inv, overrides);
    if (rc == 0) {
        if (strcmp(cmd, "run") == 0)
            rc = tern_cmd_run(&inv);
        else if (strcmp(cmd, "check") == 0)
            rc = tern_cmd_check(&inv);
        else
            rc = tern_cmd_plugins(&inv);
    } else if (rc < 0) {
        rc = TERN_EXIT_OK; /* --help */
    }
    free(overrides);
    return rc;
}
