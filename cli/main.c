/* main.c: the `tern` command. It parses argv and calls the commands of
 * libtern (run, check, plugins) and of this layer (commands.h); every
 * message about a config or plugin lives there. Each command here is one
 * table of its flags (flags.h) and the checks that tie flags together. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "flags.h"
#include "nearest_name.h"
#include "tern/libtern.h"

typedef struct command command;
/* A command's handler gets the words after its name. */
typedef int command_fn(const command *c, int argc, char **argv);
struct command {
    const char *name;
    const char *usage;
    const char *help;
    command_fn *handler;
    const char *const *subs; /* its subcommands, NULL-ended (`tern data arith`); NULL: none */
};

static const char *const model_subs[] = {"init", "convert", NULL};
static const char *const data_subs[] = {"arith", "countdown", "shapes", NULL};
static const char *const reward_subs[] = {"score", NULL};

static command_fn engine_cmd, new_plugin_cmd, model_cmd, model_convert_cmd, generate_cmd, serve_cmd, score_cmd, data_cmd,
    timeline_cmd, plot_cmd, show_cmd, reward_cmd, version_cmd, help_cmd;

static const command commands[] = {
    {"run", "tern run CONFIG [--resume] [-o section.key=value]...",
     "Check CONFIG, start every plugin it names, create the run directory\n"
     "out_dir/name/ (name-2, name-3, ... if taken) and train: the optional\n"
     "supervised warm-up, then RL steps, with greedy evaluation before RL,\n"
     "every eval.every steps and at the end. The directory gets config.cfg\n"
     "(every value in force), log.txt, metrics.jsonl (a line per step),\n"
     "rollouts.jsonl (a line per task trained on; run.keep_groups a step with\n"
     "every response), eval_responses.jsonl (every evaluation response and its\n"
     "verdict), checkpoints/, summary.json and trace.json; `tern show` prints the\n"
     "responses. The run directory's path is printed at the end.\n"
     "  --resume  continue out_dir/name from its newest checkpoint\n"
     "-o overrides a setting, typed as in the file (-o run.seed=2,\n"
     "-o run.name=\"try2\", -o trainer.steps=50); repeat it as needed.\n"
     "^C (SIGINT), SIGTERM or SIGHUP finishes the current step, writes a\n"
     "checkpoint, summary.json and trace.json and exits 130, 143 or 129; a\n"
     "second one writes summary.json and trace.json and stops at once. One\n"
     "run at a time uses a run directory (its file `lock`).\n"
     "Exit: 0 done, 1 runtime failure, 2 bad usage/config/plugin or a run\n"
     "directory in use, 129/130/143 stopped by SIGHUP/SIGINT/SIGTERM.",
     engine_cmd, NULL},
    {"check", "tern check CONFIG [--plugins-only] [-o section.key=value]...",
     "Make every check `tern run` makes before it creates anything: read and\n"
     "validate CONFIG, load and start every plugin it names, read the task\n"
     "files, check the rules that join several keys and what a run asks of\n"
     "its plugins; print what would run, and stop. It makes no model copy and\n"
     "no run directory (a buffer file kept in the run directory is only\n"
     "named). Every problem is printed as FILE:LINE: message, as run prints it.\n"
     "  --plugins-only  check only the plugins CONFIG names, not a run (a\n"
     "                  plugin's test config, which has no data.train)\n"
     "Exit: 0 valid (run accepts it), 2 invalid (1 if a plugin failed for a\n"
     "runtime reason).",
     engine_cmd, NULL},
    {"plugins", "tern plugins [--config CONFIG] [--plugin-dir DIR]",
     "List every plugin on the search path (name, kind, version, ABI, file),\n"
     "then every file that was refused and why. The search path is: DIR\n"
     "(with --plugin-dir, as `tern reward score --plugin-dir DIR` searches), the\n"
     "config's plugin_path (with --config), $TERN_PLUGIN_PATH, the per-user\n"
     "directory ($XDG_DATA_HOME/tern/plugins/abi-1, default\n"
     "~/.local/share/tern/plugins/abi-1), then the build tree's or installed\n"
     "tern/abi-1 directory beside libtern.",
     engine_cmd, NULL},
    {"new-plugin", "tern new-plugin KIND NAME [DIR]",
     "Write a ready-to-build plugin project to DIR (default ./NAME): NAME.c, a\n"
     "complete KIND plugin whose every op does something simple (replace the\n"
     "marked parts with your logic), CMakeLists.txt (find_package(Tern) and a\n"
     "test that runs `tern check --plugins-only test.cfg`), test.cfg and\n"
     "README.md. Then:\n"
     "cd DIR && cmake -S . -B build && cmake --build build && ctest --test-dir build\n"
     "KIND is model, reward, buffer, sync, environment or tool. NAME is the\n"
     "plugin's name: a lower-case letter, then lower-case letters, digits or '_'\n"
     "(at most 64).\n"
     "DIR must not exist or be empty: nothing is ever overwritten.\n"
     "Exit: 0 written, 1 a file could not be written, 2 bad usage.",
     new_plugin_cmd, NULL},
    {"model", "tern model init --preset NAME [--seed S] [--plugin P] OUT_DIR\n"
     "       tern model convert [--plugin P] MODEL OUT_DIR",
     "init: create a fresh model from the preset NAME of a model plugin and save\n"
     "it to OUT_DIR, a Hugging Face-shaped directory (config.json, weights,\n"
     "tokenizer) that `tern generate`, `tern score` and configs (model.path) load.\n"
     "convert: load MODEL (a model directory, or a file the plugin reads, such\n"
     "as a GGUF model for transformer) and save it to OUT_DIR the same way:\n"
     "float32 safetensors, config.json, tokenizer.json, tokenizer_config.json.\n"
     "  --preset NAME  a size the plugin offers (transformer: tiny, bench, or the\n"
     "                 vision-language vlm-tiny, vlm-bench)\n"
     "  --seed S       seed of the initial weights (default: the plugin's)\n"
     "  --plugin P     the model plugin (default transformer; see `tern plugins`)\n"
     "OUT_DIR must not exist (it is created, parents too) or be empty: nothing\n"
     "is ever overwritten.\n"
     "Exit: 0 written, 1 runtime failure, 2 bad usage, preset, plugin, MODEL or\n"
     "OUT_DIR.",
     model_cmd, model_subs},
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
     "  --image FILE      a PNG or PPM/PGM picture the prompt is about, for a\n"
     "                    model that reads images; the model's placeholder\n"
     "                    (e.g. <image>) and a newline go before TEXT when it\n"
     "                    holds none (docs/data.md, \"Images\")\n"
     "  --plugin P        the model plugin (default transformer)\n"
     "  --threads N       threads of the model (default: the plugin's)\n"
     "Exit: 0 done, 1 runtime failure, 2 bad usage, MODEL_DIR, plugin or prompt.",
     generate_cmd, NULL},
    {"serve", "tern serve MODEL_OR_CONFIG [--host ADDR] [--port N] [options]",
     "Serve a model over OpenAI's HTTP API, for agents, evaluation harnesses\n"
     "and any OpenAI client: /v1/chat/completions (messages, tools, n, stop,\n"
     "seed, logprobs, stream), /v1/completions, /v1/models and /health. Requests\n"
     "that arrive together are decoded together. MODEL_OR_CONFIG is what\n"
     "`tern generate` takes (a saved model directory or a GGUF file) or a config\n"
     "whose model.path is one. Until SIGINT, SIGTERM or SIGHUP (docs/serve.md).\n"
     "  --host ADDR         a loopback address (default 127.0.0.1; or ::1)\n"
     "  --listen ADDR       any address, for other machines: needs an API key\n"
     "  --port N            the port (default 8000; 0: any free one, printed)\n"
     "  --api-key-file F    clients must send 'Authorization: Bearer KEY', KEY\n"
     "                      the file's first line (or set TERN_API_KEY)\n"
     "  --name ID           the model's id for clients (default: the path's last\n"
     "                      part, without .gguf)\n"
     "  --batch N           choices decoded together at most (default 64)\n"
     "  --max-tokens N      the most tokens one request may ask for (default 4096)\n"
     "  --seed S            seeds requests that give none (default 0)\n"
     "  --plugin P          the model plugin (default: the config's, or transformer)\n"
     "  --threads N         threads of the model (default: the plugin's)\n"
     "Exit: 1 runtime failure, 2 bad usage, model or address, 129/130/143\n"
     "stopped by SIGHUP/SIGINT/SIGTERM.",
     serve_cmd, NULL},
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
     "Exit: 0 done, 1 runtime failure, 2 bad usage, MODEL_DIR, plugin or text.",
     score_cmd, NULL},
    {"data", "tern data arith [--seed S] [--train N] [--eval M] [--max K] [--ops OPS]\n"
             "                 [--question] OUT_DIR\n"
             "  tern data countdown [--seed S] [--train N] [--eval M] [--count C] [--max K]\n"
             "                      [--ops OPS] [--answers A] OUT_DIR\n"
             "  tern data shapes [--seed S] [--n N] [--size PX] [--types LIST] OUT_DIR",
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
     "  --question prompts as questions, \"What is 37 + 45?\", for chat models\n"
     "N + M must not exceed the distinct problems (for + alone: (K+1)^2).\n"
     "OUT_DIR is created if missing (parents too); an existing file is never\n"
     "overwritten. The task format: docs/data.md.\n"
     "countdown: write Countdown-style puzzles to OUT_DIR/countdown-train.jsonl\n"
     "and OUT_DIR/countdown-eval.jsonl ({\"prompt\":\"6 8 12 -> 14:\",\"numbers\":\n"
     "[6,8,12],\"target\":14,\"answer\":\"12-6+8\",...}; domain \"countdown\", judged\n"
     "by the countdown reward, which takes any expression that uses the numbers\n"
     "and makes the target). Same --seed, --train and --eval, and:\n"
     "  --count C    numbers per puzzle, 2 to 6 (default 3)\n"
     "  --max K      numbers are drawn from 1..K, K up to 1000 (default 19)\n"
     "  --ops OPS    the operations, some of + - * / (default +-); a puzzle is\n"
     "               kept when its target is a whole number >= 1\n"
     "  --answers A  only the first A training tasks carry their answer (the\n"
     "               warm-up's demonstrations); the others have \"answer\":\"\",\n"
     "               puzzles for RL alone (default: all carry it)\n"
     "shapes: write N pictures of a few coloured shapes, OUT_DIR/images/\n"
     "shape-00001.png ..., and OUT_DIR/shapes.jsonl with four vision tasks each\n"
     "(count_regions, color_at, grounding, counting; domain \"vision\", judged\n"
     "by the vision reward, which finds the images beside the tasks file).\n"
     "  --seed S   same seed and options, same files (default 1)\n"
     "  --n N      pictures, 1 to 100000 (default 100)\n"
     "  --size PX  width and height in pixels, 32 to 1024 (default 64)\n"
     "  --types LIST  only these task types, comma-separated (default: all four)\n"
     "No file is ever overwritten. The pictures and tasks: docs/data.md.\n"
     "Exit: 0 written, 1 a file could not be written, 2 bad usage or a file exists.",
     data_cmd, data_subs},
    {"timeline", "tern timeline RUN_DIR [-o FILE] [--steps N] [--from S --to S] [--width PX]",
     "Draw the run's trace.json as a timeline (SVG): a lane per explorer, the\n"
     "buffer and the trainer; rollouts (yellow) and train steps (green) with\n"
     "their batch numbers, weight syncs (purple: memory or NCCL, red:\n"
     "checkpoint), waits (grey), each batch's time in the buffer, publishes and\n"
     "stale skips; a time axis in seconds and a legend. RUN_DIR may also be\n"
     "the trace.json itself. The output's path is printed.\n"
     "  -o FILE       where to write (default RUN_DIR/timeline.svg; - for stdout)\n"
     "  --steps N     end at the end of the trainer's N-th train step (0..N-1);\n"
     "                without --steps, --from and --to: the first 30 steps (all\n"
     "                of a shorter run), as the title then says\n"
     "  --from S      start at S seconds (the axis' clock)\n"
     "  --to S        end at S seconds (not with --steps)\n"
     "  --width PX    picture width in pixels, 400 to 20000 (default 1200)\n"
     "The file is written whole or not at all. The picture: docs/timeline.md.\n"
     "Exit: 0 written, 1 the file could not be written, 2 bad usage or trace.",
     timeline_cmd, NULL},
    {"plot", "tern plot RUN_DIR... [-o FILE] [--png] [--x step|time] [--keys K,...] [--smooth N] "
             "[--label NAME]...",
     "Draw the learning curves of one or more runs from their metrics.jsonl as\n"
     "an SVG: a panel per curve, the runs overlaid in colours named in a legend.\n"
     "The panels: reward (reward_mean), held-out accuracy (eval/accuracy), KL to\n"
     "the reference (kl), entropy, response length (response_length), staleness\n"
     "and the explorer-trainer mismatch (mismatch_kl). A panel no run has data\n"
     "for is left out; a run lacking a key is absent from that panel. The\n"
     "panels drawn and the files written are printed.\n"
     "  -o FILE        where to write (default plot.svg); a FILE ending in .png\n"
     "                 writes the SVG beside it and converts it\n"
     "  --png          also write the PNG beside the SVG (it needs rsvg-convert:\n"
     "                 apt-get install librsvg2-bin)\n"
     "  --x step|time  the x axis: RL steps (default) or wall-clock time since\n"
     "                 the run started (wall_seconds, in seconds, minutes or hours)\n"
     "  --keys K,...   a panel per numeric key of the RL lines instead, in this\n"
     "                 order (--keys reward_mean,accuracy,grad_norm)\n"
     "  --smooth N     draw each curve as the mean of its last N points, over the\n"
     "                 raw curve drawn faint (default 1: none; eval/ keys never)\n"
     "  --label NAME   the legend's name of the next run, in the order of the runs\n"
     "                 (repeat it; default: the run directory's name)\n"
     "  --title TEXT   the picture's title (default: Learning curves)\n"
     "RUN_DIR may also be the metrics.jsonl itself. A last line cut short (a run\n"
     "killed while writing it) is skipped with a warning, and so are NaN and\n"
     "infinite values. A curve of more than 400 points is drawn as 400 means of\n"
     "consecutive points. The keys and the picture: docs/run.md.\n"
     "Exit: 0 written, 1 a file could not be read or written or the PNG not\n"
     "made (the SVG is kept), 2 bad usage, a missing or malformed metrics.jsonl.",
     plot_cmd, NULL},
    {"show", "tern show RUN_DIR [--step N] [--eval] [--limit K] [--chars C]",
     "Print what a run's model answered, for a person to read. By default the\n"
     "groups of the last RL step that rollouts.jsonl kept whole (run.keep_groups\n"
     "a step): each task's prompt and answer, then every response with its\n"
     "reward, verdict (right, wrong, or - where no reward gives an accuracy),\n"
     "length in tokens and how it ended (stop or length).\n"
     "  --step N    that RL step instead of the last\n"
     "  --eval      the evaluation at the last step evaluated (or at --step N)\n"
     "              from eval_responses.jsonl: its accuracy and mean reward, then\n"
     "              each task's greedy response, reward, verdict and the reward's\n"
     "              reason\n"
     "  --limit K   groups or tasks shown at most (default 10; 0: all)\n"
     "  --chars C   characters of a prompt or response shown (default 300; 0: all)\n"
     "Texts are JSON strings, so a newline shows as \\n. The files: docs/run.md.\n"
     "Exit: 0 shown, 1 a file could not be read, 2 bad usage, not a run\n"
     "directory, or no such step.",
     show_cmd, NULL},
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
     "Exit: 0 every line got a verdict; 1 some response got none (\"failed\":\n"
     "the plugin crashed, hung or failed; the count is on stderr) or a runtime\n"
     "failure; 2 bad usage, plugin, setting or input line.",
     reward_cmd, reward_subs},
    {"version", "tern version", "Print the tern release and the plugin ABI version.",
     version_cmd, NULL},
    {"help", "tern help [COMMAND [SUBCOMMAND]]", "Show the commands, or one command's help.",
     help_cmd, NULL},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

/* " (did you mean 'check'?)" when a command's name is near `name`, else "" */
static const char *command_hint(const char *name, char *buf, size_t n)
{
    const char *names[N_COMMANDS];
    for (size_t i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i].name;
    const char *best = cli_nearest_name(name, names, N_COMMANDS);
    if (!best)
        return "";
    snprintf(buf, n, " (did you mean '%s'?)", best);
    return buf;
}

/* The same among c's subcommands. */
static const char *subcommand_hint(const command *c, const char *name, char *buf, size_t n)
{
    const char *best = c->subs ? cli_nearest_name(name, c->subs, (size_t)-1) : NULL;
    if (!best)
        return "";
    snprintf(buf, n, " (did you mean '%s %s'?)", c->name, best);
    return buf;
}

static void print_overview(FILE *f)
{
    fprintf(f, "tern %s: reinforcement fine-tuning for language models\n\nusage:\n",
            tern_version_string());
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %s\n", commands[i].usage);
    cli_print_docs_text(f, "\n`tern help COMMAND` tells more. Docs: docs/config.md, "
                           "docs/plugins.md.\n");
}


/* Parse the words after command c with its flag table; pos gets up to
 * max_pos positional arguments. TERN_FLAGS_GO_ON or the exit code. */
static int parse(const command *c, const tern_flag *flags, const char **pos, size_t max_pos,
                 int argc, char **argv)
{
    const tern_flag_cmd fc = {.usage = c->usage, .help = c->help, .flags = flags, .pos = pos,
                              .max_pos = max_pos};
    return cli_flags_parse(&fc, argc, argv);
}

/* ---- libtern's commands ------------------------------------------------- */

/* `tern run|check CONFIG [-o section.key=value]...` (run also --resume,
 * check also --plugins-only) and
 * `tern plugins [--config CONFIG] [-o section.key=value]...` */
static int engine_cmd(const command *c, int argc, char **argv)
{
    int is_run = strcmp(c->name, "run") == 0, is_plugins = strcmp(c->name, "plugins") == 0;
    const char **overrides = calloc((size_t)argc + 1, sizeof *overrides);
    if (!overrides) {
        fprintf(stderr, "tern: out of memory\n");
        return TERN_EXIT_FAILURE;
    }
    tern_invocation inv = {.size = sizeof inv, .overrides = overrides};
    const tern_flag resume = {"--resume", .kind = TERN_FLAG_BOOL, TERN_FLAG_TO(inv.resume)};
    const tern_flag config = {"--config", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(inv.config_path),
                              .opts = TERN_FLAG_NO_EQUALS, .missing = "a file"};
    const tern_flag plugins_only = {"--plugins-only", .kind = TERN_FLAG_BOOL,
                                    TERN_FLAG_TO(inv.plugins_only)};
    const tern_flag plugin_dir = {"--plugin-dir", .kind = TERN_FLAG_STRING,
                                  TERN_FLAG_TO(inv.plugin_dir), .opts = TERN_FLAG_NONEMPTY,
                                  .need = "a directory of plugins"};
    const tern_flag end = TERN_FLAGS_END;
    const tern_flag flags[] = {
        {"-o", "--override", .kind = TERN_FLAG_STRING,
         TERN_FLAG_EACH(overrides, inv.n_overrides),
         .opts = TERN_FLAG_ATTACHED | TERN_FLAG_NO_EQUALS, .missing = "section.key=value"},
        is_run ? resume : is_plugins ? config : plugins_only,
        is_plugins ? plugin_dir : end,
        TERN_FLAGS_END,
    };
    /* run and check take CONFIG; plugins only --config */
    int rc = parse(c, flags, &inv.config_path, is_plugins ? 0 : 1, argc, argv);
    if (rc == TERN_FLAGS_GO_ON && !is_plugins && !inv.config_path)
        rc = cli_usage_error(c->usage, "%s needs a config file", c->name);
    /* a run outlives its readers: `tern run ... | head` or a closed
     * terminal must not end it unsaved (the logger goes on to log.txt) */
    if (rc == TERN_FLAGS_GO_ON && is_run)
        signal(SIGPIPE, SIG_IGN);
    if (rc == TERN_FLAGS_GO_ON)
        rc = is_run ? tern_cmd_run(&inv) : is_plugins ? tern_cmd_plugins(&inv)
                                                      : tern_cmd_check(&inv);
    free(overrides);
    return rc;
}

/* ---- the commands of this layer (commands.h) ---------------------------- */

/* `tern new-plugin KIND NAME [DIR]`: positional arguments only. */
static int new_plugin_cmd(const command *c, int argc, char **argv)
{
    const char *pos[3] = {NULL, NULL, NULL};
    size_t n = 0;
    const tern_flag flags[] = {TERN_FLAGS_END};
    const tern_flag_cmd fc = {.usage = c->usage, .help = c->help, .flags = flags, .pos = pos,
                              .max_pos = 3, .n_pos = &n};
    int rc = cli_flags_parse(&fc, argc, argv);
    if (rc != TERN_FLAGS_GO_ON)
        return rc;
    if (n < 2)
        return cli_usage_error(c->usage, "%s needs KIND and NAME", c->name);
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_new_plugin(&inv, pos[0], pos[1], pos[2]);
}

/* The subcommand argv[0] of `tern CMD SUB ...`, one of c->subs: its index;
 * else -1 with *rc the exit code, after the help (for -h) or the problem,
 * which lists the subcommands. */
static int subcommand(const command *c, int argc, char **argv, int *rc)
{
    const char *const *names = c->subs;
    char list[128] = "";
    size_t n = 0, o = 0;
    for (; names[n]; n++)
        o += (size_t)snprintf(list + o, o < sizeof list ? sizeof list - o : 0, "%s%s",
                              n ? ", " : "", names[n]);
    if (argc < 1) {
        *rc = cli_usage_error(c->usage, "%s needs a subcommand: %s", c->name, list);
        return -1;
    }
    if (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0) {
        *rc = cli_print_help(c->usage, c->help);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(argv[0], names[i]) == 0)
            return (int)i;
    char hint[160];
    *rc = cli_usage_error(c->usage, "unknown subcommand '%s %s'%s (%s: %s)", c->name, argv[0],
                          subcommand_hint(c, argv[0], hint, sizeof hint),
                          n == 1 ? "there is" : "there are", list);
    return -1;
}

/* `tern model convert [--plugin P] MODEL OUT_DIR` */
static int model_convert_cmd(const command *c, int argc, char **argv)
{
    const char *plugin = NULL, *pos[3] = {NULL, NULL, NULL};
    const tern_flag flags[] = {
        {"--plugin", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(plugin)},
        TERN_FLAGS_END,
    };
    int rc = parse(c, flags, pos, 2, argc - 1, argv + 1);
    if (rc != TERN_FLAGS_GO_ON)
        return rc;
    if (!pos[0] || !*pos[0] || !pos[1] || !*pos[1])
        return cli_usage_error(c->usage, "model convert needs MODEL (a model directory or file) "
                               "and OUT_DIR, the directory to write");
    if (plugin && !*plugin)
        return cli_usage_error(c->usage, "--plugin needs a plugin name");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_model_convert(&inv, plugin, pos[0], pos[1]);
}

/* `tern model init --preset NAME [--seed S] [--plugin P] OUT_DIR` */
static int model_cmd(const command *c, int argc, char **argv)
{
    int rc = TERN_FLAGS_GO_ON;
    int sub = subcommand(c, argc, argv, &rc);
    if (sub < 0)
        return rc;
    if (sub == 1)
        return model_convert_cmd(c, argc, argv);
    const char *preset = NULL, *plugin = NULL, *out_dir = NULL;
    long long seed = -1;
    const tern_flag flags[] = {
        {"--preset", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(preset)},
        {"--seed", .kind = TERN_FLAG_INT, TERN_FLAG_TO(seed), .min = 0, .max = LLONG_MAX},
        {"--plugin", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(plugin)},
        TERN_FLAGS_END,
    };
    rc = parse(c, flags, &out_dir, 1, argc - 1, argv + 1);
    if (rc != TERN_FLAGS_GO_ON)
        return rc;
    if (!preset || !*preset)
        return cli_usage_error(c->usage, "model init needs --preset NAME");
    if (!out_dir || !*out_dir)
        return cli_usage_error(c->usage, "model init needs OUT_DIR, the directory to write");
    if (plugin && !*plugin)
        return cli_usage_error(c->usage, "--plugin needs a plugin name");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_model_init(&inv, plugin, preset, seed, out_dir);
}

/* `tern generate MODEL_DIR --prompt TEXT [options]` */
static int generate_cmd(const command *c, int argc, char **argv)
{
    tern_generate_args g = {.size = sizeof g, .max_tokens = 64, .samples = 1,
                            .temperature = 1.0, .top_p = 1.0, .seed = 1};
    int32_t *stop = calloc((size_t)argc + 1, sizeof *stop);
    if (!stop) {
        fprintf(stderr, "tern: out of memory\n");
        return TERN_EXIT_FAILURE;
    }
    const tern_flag flags[] = {
        {"--prompt", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(g.prompt)},
        {"--max-tokens", .kind = TERN_FLAG_INT, TERN_FLAG_TO(g.max_tokens), .min = 1,
         .max = UINT32_MAX},
        {"--temperature", .kind = TERN_FLAG_DOUBLE, TERN_FLAG_TO(g.temperature), .lo = 0,
         .hi = HUGE_VAL, .need = "a number >= 0, 0 for greedy"},
        {"--top-k", .kind = TERN_FLAG_INT, TERN_FLAG_TO(g.top_k), .min = 0, .max = INT32_MAX},
        {"--top-p", .kind = TERN_FLAG_DOUBLE, TERN_FLAG_TO(g.top_p), .lo = 0, .hi = 1,
         .opts = TERN_FLAG_ABOVE_LO, .need = "a number in (0, 1], 1 for off"},
        {"--seed", .kind = TERN_FLAG_U64, TERN_FLAG_TO(g.seed)},
        {"--samples", .kind = TERN_FLAG_INT, TERN_FLAG_TO(g.samples), .min = 1,
         .max = UINT32_MAX},
        {"--stop-token", .kind = TERN_FLAG_INT, TERN_FLAG_EACH(stop, g.n_stop), .min = 0,
         .max = INT32_MAX},
        {"--plugin", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(g.plugin),
         .opts = TERN_FLAG_NONEMPTY, .need = "a plugin name"},
        {"--threads", .kind = TERN_FLAG_INT, TERN_FLAG_TO(g.threads), .min = 1,
         .max = INT32_MAX},
        {"--chat", .kind = TERN_FLAG_BOOL, TERN_FLAG_TO(g.chat)},
        {"--system", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(g.system)},
        {"--image", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(g.image), .opts = TERN_FLAG_NONEMPTY,
         .need = "a PNG or PPM/PGM file"},
        TERN_FLAGS_END,
    };
    int rc = parse(c, flags, &g.model_dir, 1, argc, argv);
    if (rc == TERN_FLAGS_GO_ON && !g.model_dir)
        rc = cli_usage_error(c->usage, "generate needs MODEL_DIR, the directory of a saved model");
    if (rc == TERN_FLAGS_GO_ON && !g.prompt)
        rc = cli_usage_error(c->usage, "generate needs --prompt TEXT");
    if (rc == TERN_FLAGS_GO_ON && g.system && !g.chat)
        rc = cli_usage_error(c->usage, "--system needs --chat (a system turn is part of a chat "
                             "template)");
    if (rc == TERN_FLAGS_GO_ON) {
        g.prompt_len = strlen(g.prompt);
        g.stop = stop;
        tern_invocation inv = {.size = sizeof inv};
        rc = tern_cmd_generate(&inv, &g);
    }
    free(stop);
    return rc;
}

/* `tern serve MODEL_OR_CONFIG [options]` */
static int serve_cmd(const command *c, int argc, char **argv)
{
    tern_serve_args a = {.size = sizeof a, .port = 8000};
    const tern_flag flags[] = {
        {"--host", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(a.host), .opts = TERN_FLAG_NONEMPTY,
         .need = "a loopback address"},
        {"--listen", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(a.listen),
         .opts = TERN_FLAG_NONEMPTY, .need = "an address"},
        {"--port", .kind = TERN_FLAG_INT, TERN_FLAG_TO(a.port), .min = 0, .max = 65535},
        {"--api-key-file", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(a.api_key_file),
         .opts = TERN_FLAG_NONEMPTY, .need = "a file"},
        {"--name", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(a.name), .opts = TERN_FLAG_NONEMPTY,
         .need = "a model id"},
        {"--batch", .kind = TERN_FLAG_INT, TERN_FLAG_TO(a.batch), .min = 1, .max = 4096},
        {"--max-tokens", .kind = TERN_FLAG_INT, TERN_FLAG_TO(a.max_tokens), .min = 1,
         .max = 1 << 20},
        {"--seed", .kind = TERN_FLAG_U64, TERN_FLAG_TO(a.seed)},
        {"--plugin", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(a.plugin),
         .opts = TERN_FLAG_NONEMPTY, .need = "a plugin name"},
        {"--threads", .kind = TERN_FLAG_INT, TERN_FLAG_TO(a.threads), .min = 1,
         .max = INT32_MAX},
        TERN_FLAGS_END,
    };
    int rc = parse(c, flags, &a.target, 1, argc, argv);
    if (rc == TERN_FLAGS_GO_ON && !a.target)
        rc = cli_usage_error(c->usage, "serve needs MODEL_OR_CONFIG: a saved model directory, "
                             "a GGUF file or a config whose model.path is one");
    if (rc == TERN_FLAGS_GO_ON) {
        tern_invocation inv = {.size = sizeof inv};
        rc = tern_cmd_serve(&inv, &a);
    }
    return rc;
}

/* `tern score MODEL_DIR --text TEXT [--plugin P] [--threads N]` */
static int score_cmd(const command *c, int argc, char **argv)
{
    tern_score_args sa = {.size = sizeof sa};
    const tern_flag flags[] = {
        {"--text", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(sa.text)},
        {"--plugin", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(sa.plugin),
         .opts = TERN_FLAG_NONEMPTY, .need = "a plugin name"},
        {"--threads", .kind = TERN_FLAG_INT, TERN_FLAG_TO(sa.threads), .min = 1,
         .max = INT32_MAX},
        TERN_FLAGS_END,
    };
    int rc = parse(c, flags, &sa.model_dir, 1, argc, argv);
    if (rc != TERN_FLAGS_GO_ON)
        return rc;
    if (!sa.model_dir)
        return cli_usage_error(c->usage, "score needs MODEL_DIR, the directory of a saved model");
    if (!sa.text)
        return cli_usage_error(c->usage, "score needs --text TEXT");
    sa.text_len = strlen(sa.text);
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_score(&inv, &sa);
}

/* `tern data shapes [--seed S] [--n N] [--size PX] [--types LIST] OUT_DIR` (argv[0] is
 * "shapes") */
static int data_shapes_cmd(const command *c, int argc, char **argv)
{
    tern_shapes_args sa = {.size = sizeof sa, .seed = 1, .n_images = 100, .size_px = 64};
    const tern_flag flags[] = {
        {"--seed", .kind = TERN_FLAG_U64, TERN_FLAG_TO(sa.seed)},
        {"--n", .kind = TERN_FLAG_INT, TERN_FLAG_TO(sa.n_images), .min = 1, .max = 100000},
        {"--size", .kind = TERN_FLAG_INT, TERN_FLAG_TO(sa.size_px), .min = 32, .max = 1024},
        {"--types", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(sa.types)},
        TERN_FLAGS_END,
    };
    int rc = parse(c, flags, &sa.out_dir, 1, argc - 1, argv + 1);
    if (rc != TERN_FLAGS_GO_ON)
        return rc;
    if (!sa.out_dir || !*sa.out_dir)
        return cli_usage_error(c->usage, "data shapes needs OUT_DIR, the directory to write the "
                               "tasks and images to");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_data_shapes(&inv, &sa);
}

/* `tern data countdown [--seed S] [--train N] [--eval M] [--count C] [--max K]
 * [--ops OPS] [--answers A] OUT_DIR` (argv[0] is "countdown") */
static int data_countdown_cmd(const command *c, int argc, char **argv)
{
    tern_countdown_args ca = {.size = sizeof ca, .seed = 1, .n_train = 2000, .n_eval = 200,
                              .count = 3, .max_number = 19, .ops = "+-",
                              .n_answers = ULLONG_MAX};
    const tern_flag flags[] = {
        {"--seed", .kind = TERN_FLAG_U64, TERN_FLAG_TO(ca.seed)},
        {"--train", .kind = TERN_FLAG_INT, TERN_FLAG_TO(ca.n_train), .min = 1, .max = LLONG_MAX},
        {"--eval", .kind = TERN_FLAG_INT, TERN_FLAG_TO(ca.n_eval), .min = 1, .max = LLONG_MAX},
        {"--count", .kind = TERN_FLAG_INT, TERN_FLAG_TO(ca.count), .min = 2, .max = 6},
        {"--max", .kind = TERN_FLAG_INT, TERN_FLAG_TO(ca.max_number), .min = 1, .max = 1000},
        {"--ops", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(ca.ops), .opts = TERN_FLAG_NONEMPTY,
         .need = "some of + - * / (e.g. --ops '+-*')"},
        {"--answers", .kind = TERN_FLAG_U64, TERN_FLAG_TO(ca.n_answers)},
        TERN_FLAGS_END,
    };
    int rc = parse(c, flags, &ca.out_dir, 1, argc - 1, argv + 1);
    if (rc != TERN_FLAGS_GO_ON)
        return rc;
    if (!ca.out_dir || !*ca.out_dir)
        return cli_usage_error(c->usage, "data countdown needs OUT_DIR, the directory to write "
                               "the tasks to");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_data_countdown(&inv, &ca);
}

/* `tern data arith [--seed S] [--train N] [--eval M] [--max K] [--ops OPS] OUT_DIR` */
static int data_cmd(const command *c, int argc, char **argv)
{
    int rc = TERN_FLAGS_GO_ON;
    int sub = subcommand(c, argc, argv, &rc);
    if (sub < 0)
        return rc;
    if (sub == 1)
        return data_countdown_cmd(c, argc, argv);
    if (sub == 2)
        return data_shapes_cmd(c, argc, argv);
    tern_arith_args da = {.size = sizeof da, .seed = 1, .n_train = 2000, .n_eval = 200,
                          .max_operand = 49, .ops = "+"};
    const tern_flag flags[] = {
        {"--seed", .kind = TERN_FLAG_U64, TERN_FLAG_TO(da.seed)},
        {"--train", .kind = TERN_FLAG_INT, TERN_FLAG_TO(da.n_train), .min = 1, .max = LLONG_MAX},
        {"--eval", .kind = TERN_FLAG_INT, TERN_FLAG_TO(da.n_eval), .min = 1, .max = LLONG_MAX},
        {"--max", .kind = TERN_FLAG_INT, TERN_FLAG_TO(da.max_operand), .min = 0, .max = INT_MAX},
        {"--ops", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(da.ops), .opts = TERN_FLAG_NONEMPTY,
         .need = "some of + - * (e.g. --ops '+-*')"},
        {"--question", .kind = TERN_FLAG_BOOL, TERN_FLAG_TO(da.question)},
        TERN_FLAGS_END,
    };
    rc = parse(c, flags, &da.out_dir, 1, argc - 1, argv + 1);
    if (rc != TERN_FLAGS_GO_ON)
        return rc;
    if (!da.out_dir || !*da.out_dir)
        return cli_usage_error(c->usage, "data arith needs OUT_DIR, the directory to write the "
                               "tasks to");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_data_arith(&inv, &da);
}

/* `tern reward score --plugin NAME [-o key=value]... [--plugin-dir DIR] [--batch N]` */
static int reward_cmd(const command *c, int argc, char **argv)
{
    int rc = TERN_FLAGS_GO_ON;
    if (subcommand(c, argc, argv, &rc) < 0)
        return rc;
    const char **options = calloc((size_t)argc, sizeof *options);
    if (!options) {
        fprintf(stderr, "tern: out of memory\n");
        return TERN_EXIT_FAILURE;
    }
    tern_reward_score_args ra = {.size = sizeof ra, .options = options};
    const tern_flag flags[] = {
        {"--plugin", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(ra.plugin),
         .opts = TERN_FLAG_NONEMPTY, .need = "a plugin name"},
        {"--plugin-dir", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(ra.plugin_dir)},
        {"--batch", .kind = TERN_FLAG_INT, TERN_FLAG_TO(ra.batch), .min = 1, .max = 1000000},
        {"-o", .kind = TERN_FLAG_STRING, TERN_FLAG_EACH(options, ra.n_options),
         .opts = TERN_FLAG_ATTACHED},
        TERN_FLAGS_END,
    };
    const tern_flag_cmd fc = {.usage = c->usage, .help = c->help, .flags = flags,
                              .extra_hint = " (the cases come on standard input: tern reward "
                                            "score --plugin NAME < cases.jsonl)"};
    rc = cli_flags_parse(&fc, argc - 1, argv + 1);
    if (rc == TERN_FLAGS_GO_ON && !ra.plugin)
        rc = cli_usage_error(c->usage, "reward score needs --plugin NAME (`tern plugins` lists "
                             "the reward plugins)");
    if (rc == TERN_FLAGS_GO_ON) {
        tern_invocation inv = {.size = sizeof inv};
        rc = tern_cmd_reward_score(&inv, &ra);
    }
    free(options);
    return rc;
}

/* `tern timeline RUN_DIR [-o FILE] [--steps N] [--from S] [--to S] [--width PX]` */
static int timeline_cmd(const command *c, int argc, char **argv)
{
    tern_timeline_args ta = {.size = sizeof ta};
    const tern_flag flags[] = {
        {"-o", "--output", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(ta.out_path),
         .opts = TERN_FLAG_NONEMPTY, .need = "a file name (or - for stdout)"},
        {"--steps", .kind = TERN_FLAG_INT, TERN_FLAG_TO(ta.steps), .min = 1, .max = LLONG_MAX},
        {"--from", .kind = TERN_FLAG_DOUBLE, TERN_FLAG_TO(ta.from_s), .lo = 0, .hi = HUGE_VAL,
         .need = "a number of seconds >= 0", .given = &ta.has_from},
        {"--to", .kind = TERN_FLAG_DOUBLE, TERN_FLAG_TO(ta.to_s), .lo = 0, .hi = HUGE_VAL,
         .need = "a number of seconds >= 0", .given = &ta.has_to},
        {"--width", .kind = TERN_FLAG_INT, TERN_FLAG_TO(ta.width), .min = 400, .max = 20000},
        TERN_FLAGS_END,
    };
    int rc = parse(c, flags, &ta.run_dir, 1, argc, argv);
    if (rc != TERN_FLAGS_GO_ON)
        return rc;
    if (!ta.run_dir || !*ta.run_dir)
        return cli_usage_error(c->usage, "timeline needs RUN_DIR, a run directory (or its "
                               "trace.json)");
    if (ta.has_from && ta.has_to && ta.from_s >= ta.to_s)
        return cli_usage_error(c->usage, "--from (%g) must be less than --to (%g)", ta.from_s,
                               ta.to_s);
    if (ta.steps > 0 && ta.has_to)
        return cli_usage_error(c->usage, "--steps and --to both say where the picture ends: "
                               "give one");
    tern_invocation inv = {.size = sizeof inv};
    return tern_cmd_timeline(&inv, &ta);
}

/* `tern plot RUN_DIR... [-o FILE] [--png] [--x step|time] [--keys K,...] [--smooth N]
 * [--label NAME]... [--title TEXT]` */
static int plot_cmd(const command *c, int argc, char **argv)
{
    const char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
    const char **labels = calloc((size_t)argc + 1, sizeof *labels);
    if (!dirs || !labels) {
        free(dirs);
        free(labels);
        fprintf(stderr, "tern: out of memory\n");
        return TERN_EXIT_FAILURE;
    }
    tern_plot_args pa = {.size = sizeof pa, .run_dirs = dirs, .labels = labels, .smooth = 1};
    const tern_flag flags[] = {
        {"-o", "--out", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(pa.out_path),
         .opts = TERN_FLAG_NONEMPTY, .need = "a file name (.svg, or .png)"},
        {"--png", .kind = TERN_FLAG_BOOL, TERN_FLAG_TO(pa.png)},
        {"--x", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(pa.x), .opts = TERN_FLAG_NONEMPTY,
         .need = "step or time"},
        {"--keys", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(pa.keys), .opts = TERN_FLAG_NONEMPTY,
         .need = "key names separated by commas (--keys reward_mean,kl)"},
        {"--smooth", .kind = TERN_FLAG_INT, TERN_FLAG_TO(pa.smooth), .min = 1, .max = 100000},
        {"--label", .kind = TERN_FLAG_STRING, TERN_FLAG_EACH(labels, pa.n_labels),
         .opts = TERN_FLAG_NONEMPTY, .need = "a name"},
        {"--title", .kind = TERN_FLAG_STRING, TERN_FLAG_TO(pa.title)},
        TERN_FLAGS_END,
    };
    const tern_flag_cmd fc = {.usage = c->usage, .help = c->help, .flags = flags, .pos = dirs,
                              .max_pos = (size_t)argc, .n_pos = &pa.n_runs};
    int rc = cli_flags_parse(&fc, argc, argv);
    if (rc == TERN_FLAGS_GO_ON && pa.n_runs == 0)
        rc = cli_usage_error(c->usage, "plot needs RUN_DIR, one or more run directories (the "
                             "path `tern run` prints at its end)");
    if (rc == TERN_FLAGS_GO_ON && pa.x && strcmp(pa.x, "step") != 0 && strcmp(pa.x, "time") != 0)
        rc = cli_usage_error(c->usage, "--x needs step or time (got '%s')", pa.x);
    if (rc == TERN_FLAGS_GO_ON && pa.n_labels > pa.n_runs)
        rc = cli_usage_error(c->usage, "--label given %zu times for %zu run%s: one per run, in "
                             "the order of the runs", pa.n_labels, pa.n_runs,
                             pa.n_runs == 1 ? "" : "s");
    if (rc == TERN_FLAGS_GO_ON) {
        tern_invocation inv = {.size = sizeof inv};
        rc = tern_cmd_plot(&inv, &pa);
    }
    free(dirs);
    free(labels);
    return rc;
}

/* `tern show RUN_DIR [--step N] [--eval] [--limit K] [--chars C]` */
static int show_cmd(const command *c, int argc, char **argv)
{
    const char *dir[2] = {0};
    size_t n_dirs = 0;
    tern_show_args sa = {.size = sizeof sa, .step = -1, .limit = 10, .chars = 300};
    const tern_flag flags[] = {
        {"--step", .kind = TERN_FLAG_INT, TERN_FLAG_TO(sa.step), .min = 0, .max = LLONG_MAX},
        {"--eval", .kind = TERN_FLAG_BOOL, TERN_FLAG_TO(sa.eval)},
        {"--limit", .kind = TERN_FLAG_INT, TERN_FLAG_TO(sa.limit), .min = 0, .max = LLONG_MAX},
        {"--chars", .kind = TERN_FLAG_INT, TERN_FLAG_TO(sa.chars), .min = 0, .max = LLONG_MAX},
        TERN_FLAGS_END,
    };
    const tern_flag_cmd fc = {.usage = c->usage, .help = c->help, .flags = flags, .pos = dir,
                              .max_pos = 1, .n_pos = &n_dirs};
    int rc = cli_flags_parse(&fc, argc, argv);
    if (rc == TERN_FLAGS_GO_ON && n_dirs == 0)
        rc = cli_usage_error(c->usage, "show needs RUN_DIR, a run directory (the path `tern "
                             "run` prints at its end)");
    if (rc == TERN_FLAGS_GO_ON) {
        sa.run_dir = dir[0];
        tern_invocation inv = {.size = sizeof inv};
        rc = tern_cmd_show(&inv, &sa);
    }
    return rc;
}

/* ---- version and help --------------------------------------------------- */

static int version_cmd(const command *c, int argc, char **argv)
{
    if (argc > 0)
        return cli_usage_error(c->usage, "unexpected argument '%s'", argv[0]);
    printf("tern %s (plugin ABI %d.%d)\n", tern_version_string(), TERN_ABI_MAJOR, TERN_ABI_MINOR);
    return TERN_EXIT_OK;
}

/* `tern help [COMMAND [SUBCOMMAND]]`: a command's help covers its
 * subcommands (`tern help reward score`, `tern help data countdown`). */
static int help_cmd(const command *c, int argc, char **argv)
{
    if (argc == 0) {
        print_overview(stdout);
        return TERN_EXIT_OK;
    }
    const command *h = find_command(argv[0]);
    char hint[160];
    if (!h)
        return cli_usage_error(NULL, "no command '%s'%s", argv[0],
                               command_hint(argv[0], hint, sizeof hint));
    if (argc > 1) {
        size_t i = 0;
        while (h->subs && h->subs[i] && strcmp(h->subs[i], argv[1]) != 0)
            i++;
        if (!h->subs)
            return cli_usage_error(c->usage, "'%s' has no subcommands: tern help %s", h->name,
                                   h->name);
        if (!h->subs[i])
            return cli_usage_error(c->usage, "no command '%s %s'%s; see tern help %s", h->name,
                                   argv[1], subcommand_hint(h, argv[1], hint, sizeof hint),
                                   h->name);
        if (argc > 2)
            return cli_usage_error(c->usage, "unexpected argument '%s'", argv[2]);
    }
    return cli_print_help(h->usage, h->help);
}

/* Descriptors 0-2 the caller left closed (`2>&-`) would go to the next files
 * opened, and stderr's lines into log.txt: hold them with /dev/null before
 * anything opens a file. 0, or -1 when /dev/null cannot be opened. */
static int reserve_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        /* the lowest free descriptor: fd itself, those below being open */
        int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (got != fd) {
            if (got >= 0)
                close(got);
            return -1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (reserve_std_fds() != 0) {
        fprintf(stderr, "tern: cannot open /dev/null for a closed standard descriptor: %s\n",
                strerror(errno));
        return TERN_EXIT_FAILURE;
    }
    if (argc < 2) {
        print_overview(stderr);
        return TERN_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "-h") == 0 || strcmp(name, "--help") == 0) {
        print_overview(stdout);
        return TERN_EXIT_OK;
    }
    if (strcmp(name, "--version") == 0)
        name = "version";
    const command *c = find_command(name);
    char hint[160];
    if (!c)
        return cli_usage_error(NULL, "unknown command '%s'%s", name,
                               command_hint(name, hint, sizeof hint));
    return c->handler(c, argc - 2, argv + 2);
}
