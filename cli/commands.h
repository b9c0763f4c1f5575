/* commands.h: the commands of the layer above libtern (cli/README.md):
 * `tern new-plugin`, `tern model init`, `tern generate`, `tern score`,
 * `tern data arith|shapes`, `tern timeline`, `tern plot`, `tern show` and
 * `tern reward score`. Each
 * follows libtern's command convention (tern/libtern.h): it takes a
 * tern_invocation, prints what the user asked for to `out` and every problem
 * to `err` (one line each: what, where, how to fix), and returns the exit
 * code. main.c calls them; the tests call them through the `tern` binary or
 * the static archive tern_cli_static. Not installed: not part of the SDK. */
#ifndef TERN_CLI_COMMANDS_H
#define TERN_CLI_COMMANDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tern/libtern.h"

/* `tern new-plugin KIND NAME [DIR]`: write a ready-to-build out-of-tree
 * plugin project to DIR (NULL: ./NAME): NAME.c, a complete plugin of KIND
 * ("model", "reward", "buffer" or "sync") whose every op does something
 * simple, CMakeLists.txt (find_package(Tern), tern_add_plugin() and a test
 * that runs `tern check test.cfg`), test.cfg and README.md. NAME is
 * [a-z][a-z0-9_]*, at most 64 characters. Nothing is ever overwritten: DIR
 * must be absent (it is created, parents too) or an empty directory.
 * Prints the files and the next commands to `out`. config_path and the
 * overrides of `inv` are not used. 0 when written; 2 for a bad KIND, NAME or
 * DIR (nothing is touched); 1 when a file cannot be written ("PATH: cannot
 * write: <reason>"), after removing whatever this call had created. */
int tern_cmd_new_plugin(const tern_invocation *inv, const char *kind, const char *name,
                                 const char *dir);

/* ---- Driving a model plugin: `tern model init`, `tern generate`, `tern score`.
 * Each makes one model instance through its plugin's settings, as a config
 * would (docs/cli-model.md):
 *   model = { plugin = PLUGIN; path = MODEL_DIR; threads = N; };          (load)
 *   model = { plugin = PLUGIN; init = { preset = P; seed = S; }; };       (fresh)
 * PLUGIN NULL means "transformer"; the plugin is found on the usual search
 * path (`tern plugins`). config_path and the overrides of `inv` are not used.
 * Problems are one line each on `err`, the plugin's own message included.
 * Exit codes: 0 done; 2 bad usage, a missing MODEL_DIR, a plugin that is not
 * found or refuses its settings or the directory (a bad preset, a directory
 * that holds no model of its kind), input the model rejects (TERN_EINVAL);
 * 1 a runtime failure (I/O, memory, a plugin op failing otherwise). Every
 * buffer the plugin hands out is freed with its free_buffer. */

/* `tern model init --preset NAME [--seed S] [--plugin P] OUT_DIR`: create a
 * fresh model from the plugin's preset NAME and save it to OUT_DIR (ops->save
 * with with_optimizer = 0) as a Hugging Face-shaped directory. seed < 0 leaves
 * the plugin's default seed. Nothing is ever overwritten: OUT_DIR must be
 * absent (it is created, parents too) or an empty directory, else exit 2 and
 * nothing is touched; if saving fails, what this call created is removed.
 * Prints the directory and the files in it to `out`. */
int tern_cmd_model_init(const tern_invocation *inv, const char *plugin,
                                 const char *preset, long long seed, const char *out_dir);

/* `tern model convert [--plugin P] MODEL OUT_DIR`: load MODEL (a model
 * directory, or a model file the plugin reads: a GGUF file for transformer)
 * and save it to OUT_DIR as tern_cmd_model_init saves a fresh one, under
 * the same rules (OUT_DIR absent or empty, removed again on failure).
 * Prints the directory and the files in it to `out`. */
int tern_cmd_model_convert(const tern_invocation *inv, const char *plugin, const char *model,
                           const char *out_dir);

/* What `tern generate` does; build it as
 *   tern_generate_args a = {.size = sizeof a, .model_dir = "ckpt", .prompt = "Hi",
 *                           .prompt_len = 2, .max_tokens = 64, .temperature = 1.0,
 *                           .top_p = 1.0, .seed = 1, .samples = 1};
 * Members are appended only; `size` tells which this caller knows. */
typedef struct tern_generate_args {
    size_t size;            /* sizeof(tern_generate_args) as built by the caller */
    const char *plugin;     /* model plugin name; NULL: "transformer" */
    const char *model_dir;  /* directory of a saved model (the plugin's `path`) */
    const char *prompt;     /* raw bytes, tokenized with BOS added */
    size_t prompt_len;      /* bytes of prompt */
    uint32_t max_tokens;    /* new tokens per sample at most (>= 1) */
    uint32_t samples;       /* continuations to draw (>= 1) */
    double temperature;     /* >= 0; 0: greedy */
    int32_t top_k;          /* >= 0; 0: off */
    double top_p;           /* in (0, 1]; 1: off */
    uint64_t seed;          /* same seed, arguments and threads: same output */
    const int32_t *stop;    /* token ids that end a sample, which keeps the one
                               met; with none, a sample ends at max_tokens (or
                               where the plugin stops on its own) */
    size_t n_stop;          /* entries in stop */
    uint32_t threads;       /* the plugin's `threads`; 0: its default */
    /* appended in 0.1 with ABI 1.4 (check size) */
    int chat;               /* 1: the prompt is a user turn, formatted with the
                               model's chat template (its encode_chat op), and a
                               sample also ends at the model's EOS (the
                               template's end of turn) */
    const char *system;     /* with chat: a system turn before it, or NULL */
    /* appended in 0.1 with ABI 1.12 (check size) */
    const char *image;      /* a PNG or PPM/PGM file the prompt is about, or NULL: given
                               to a model that reads images (its image_spec op), the
                               prompt getting the model's placeholder and a newline
                               first when it holds none (docs/data.md, "Images") */
} tern_generate_args;

/* `tern generate MODEL_DIR --prompt TEXT [...]`: load the model, tokenize the
 * prompt (with BOS; with `chat`, through the model's chat template), draw
 * `samples` continuations and print each one
 * detokenized, as raw bytes (the model may emit invalid UTF-8): with one
 * sample the text and a newline; with more, each after a header line
 * "--- sample I (N tokens, logprob L) ---" (I from 1, L the sum of the
 * tokens' log-probs under the distribution sampled from). */
int tern_cmd_generate(const tern_invocation *inv, const tern_generate_args *args);

/* What `tern serve` does (docs/serve.md); members are appended only. */
typedef struct tern_serve_args {
    size_t size;              /* sizeof(tern_serve_args) as built by the caller */
    const char *target;       /* a saved model directory, a GGUF file, or a config (.cfg)
                                 whose model.path is one */
    const char *plugin;       /* model plugin; NULL: the config's, else "transformer" */
    uint32_t threads;         /* model threads; 0: the config's or the plugin's */
    const char *host;         /* a loopback address to listen on (NULL: 127.0.0.1) */
    const char *listen;       /* any address; needs an API key (NULL: use host) */
    uint32_t port;            /* 0: any free port (the log line names it) */
    const char *api_key_file; /* the key's file (first line); NULL: TERN_API_KEY */
    const char *name;         /* the model's id for clients; NULL: the path's last part */
    uint32_t batch;           /* choices decoded together at most; 0: the default */
    uint32_t max_tokens;      /* the most tokens a request may ask for; 0: the default */
    uint64_t seed;            /* seeds requests that give none */
} tern_serve_args;

/* `tern serve MODEL_OR_CONFIG`: the model behind OpenAI's HTTP API
 * (/v1/chat/completions, /v1/completions, /v1/models, /health) until
 * SIGINT, SIGTERM or SIGHUP; exits 128 + the signal then, or an exit code
 * for a model or address it could not start with. */
int tern_cmd_serve(const tern_invocation *inv, const tern_serve_args *args);

/* What `tern score` does; members are appended only. */
typedef struct tern_score_args {
    size_t size;            /* sizeof(tern_score_args) as built by the caller */
    const char *plugin;     /* model plugin name; NULL: "transformer" */
    const char *model_dir;  /* directory of a saved model (the plugin's `path`) */
    const char *text;       /* raw bytes, tokenized with BOS added */
    size_t text_len;        /* bytes of text */
    uint32_t threads;       /* the plugin's `threads`; 0: its default */
} tern_score_args;

/* `tern score MODEL_DIR --text TEXT`: load the model, tokenize the text (with
 * BOS) and print, for each position i >= 1 of the tokens x,
 *   i TAB id TAB token-text TAB log p(x[i] | x[0..i)) TAB entropy
 * (6 decimals; the token's text with \n, \t, \\ and \xNN for other
 * control bytes and bytes that are not valid UTF-8), then
 *   total logprob X over N tokens, perplexity Y
 * with Y = exp(-X / N). A text that gives no token after BOS is exit 2. */
int tern_cmd_score(const tern_invocation *inv, const tern_score_args *args);

/* What `tern data arith` does; build it as
 *   tern_arith_args a = {.size = sizeof a, .seed = 1, .n_train = 2000, .n_eval = 200,
 *                        .max_operand = 49, .ops = "+", .out_dir = "data"};
 * (the command's defaults). Members are appended only; `size` tells which
 * this caller knows. */
typedef struct tern_arith_args {
    size_t size;                    /* sizeof(tern_arith_args) as built by the caller */
    unsigned long long seed;        /* same seed and arguments: the same bytes */
    unsigned long long n_train;     /* training tasks (>= 1) */
    unsigned long long n_eval;      /* evaluation tasks (>= 1), held out from training */
    int max_operand;                /* operands are drawn from 0..max_operand (>= 0) */
    const char *ops;                /* some of "+-*", each once; NULL: "+" */
    const char *out_dir;            /* the directory to write the two files to */
    int question;                   /* 1: "What is 37 + 45?" prompts (--question), for chat models */
} tern_arith_args;

/* `tern data arith [--seed S] [--train N] [--eval M] [--max K] [--ops OPS]
 * OUT_DIR`: write the synthetic arithmetic tasks of the quickstart
 * (docs/data.md) to OUT_DIR/arith-train.jsonl and OUT_DIR/arith-eval.jsonl,
 * one task per line: {"id":"arith-train-00001","domain":"math",
 * "prompt":"37+45=","answer":"82"}. A problem is a op b with a, b in
 * 0..max_operand ('-' only with a >= b: no answer is negative); the problems
 * are distinct within and across the two files (eval is held out), drawn
 * uniformly from all of them, so n_train + n_eval must not exceed their
 * number. OUT_DIR is created (parents too) if missing. Nothing is ever
 * overwritten: if either file exists, exit 2 and nothing is touched. Each
 * file is written to a temporary file and renamed into place. Prints both
 * paths with their counts to `out`. config_path and the overrides of `inv`
 * are not used. 0 when written; 2 for bad arguments (a message saying what
 * and how to fix: too many tasks for the operand range names the maximum),
 * an existing file or an OUT_DIR that is not a directory; 1 when a file or
 * OUT_DIR cannot be written ("PATH: cannot write: <reason>"), after removing
 * what this call created. */
int tern_cmd_data_arith(const tern_invocation *inv, const tern_arith_args *a);

/* What `tern data countdown` does; build it as
 *   tern_countdown_args a = {.size = sizeof a, .seed = 1, .n_train = 2000, .n_eval = 200,
 *                            .count = 3, .max_number = 19, .ops = "+-",
 *                            .out_dir = "data", .n_answers = ULLONG_MAX};
 * (the command's defaults). Members are appended only; `size` tells which
 * this caller knows. */
typedef struct tern_countdown_args {
    size_t size;                    /* sizeof(tern_countdown_args) as built by the caller */
    unsigned long long seed;        /* same seed and arguments: the same bytes */
    unsigned long long n_train;     /* training tasks (>= 1) */
    unsigned long long n_eval;      /* evaluation tasks (>= 1), held out from training */
    int count;                      /* numbers per puzzle, 2..6 */
    int max_number;                 /* numbers are drawn from 1..max_number (1..1000) */
    const char *ops;                /* some of + - * and /, each once; NULL: "+-" */
    const char *out_dir;            /* the directory to write the two files to */
    unsigned long long n_answers;   /* training tasks that carry their answer (the first
                                       ones; the rest have ""); >= n_train: all */
} tern_countdown_args;

/* `tern data countdown [--seed S] [--train N] [--eval M] [--count C] [--max K]
 * [--ops OPS] [--answers A] OUT_DIR`: write Countdown-style puzzles (data/countdown.h,
 * docs/data.md) to OUT_DIR/countdown-train.jsonl and
 * OUT_DIR/countdown-eval.jsonl, one task per line:
 * {"id":"countdown-train-00001","domain":"countdown","prompt":"6 8 12 -> 14:",
 * "numbers":[6,8,12],"target":14,"answer":"12-6+8"}, judged by the
 * `countdown` reward. Distinct puzzles within and across the files (eval is
 * held out). Files, directories, output and exit codes as for
 * tern_cmd_data_arith; asking for more puzzles than the draws find is exit 2
 * with a message saying how many were found. */
int tern_cmd_data_countdown(const tern_invocation *inv, const tern_countdown_args *a);

/* What `tern data shapes` does; build it as
 *   tern_shapes_args a = {.size = sizeof a, .seed = 1, .n_images = 100, .size_px = 64,
 *                         .out_dir = "data/shapes"};
 * (the command's defaults). Members are appended only; `size` tells which
 * this caller knows. */
typedef struct tern_shapes_args {
    size_t size;                    /* sizeof(tern_shapes_args) as built by the caller */
    unsigned long long seed;        /* same seed and arguments: the same bytes */
    unsigned long long n_images;    /* pictures (1..100000); four tasks each */
    int size_px;                    /* width and height of each picture, 32..1024 pixels */
    const char *out_dir;            /* the directory to write the tasks and images to */
    /* appended: the task types to write, comma-separated names of
     * count_regions, color_at, grounding, counting; NULL or "": all four */
    const char *types;
} tern_shapes_args;

/* `tern data shapes [--seed S] [--n N] [--size PX] [--types LIST] OUT_DIR`: write N
 * synthetic pictures, PX x PX PNG files OUT_DIR/images/shape-00001.png, ...
 * (3 to 6 filled rectangles, circles and triangles in named colours on
 * white; no two shapes touch), and OUT_DIR/shapes.jsonl with four vision
 * tasks per picture (docs/data.md), in this order: count_regions ("How many
 * red shapes...", judged by counting the colour's regions in the image),
 * color_at (the colour name at a point), grounding (the box of the one shape
 * of its colour, stored as "box") and counting (shapes of a kind, stored as
 * "answer"); --types keeps the listed types only (the pictures are the same
 * whatever it says). A task line reads {"id":"shapes-00001-count_regions",
 * "domain":"vision","prompt":"...","image":"images/shape-00001.png",
 * "type":"count_regions","color":"red","answer":"2"} (every task stores a
 * right answer, for a warm-up; the reward judges count_regions, color_at and
 * grounding from the picture all the same); image paths are
 * relative to the tasks file, which is how the `vision` reward resolves
 * them. OUT_DIR (and images/) is created, parents too, if missing. Nothing is
 * ever overwritten: if the tasks file or any of the N images exists, exit 2
 * and nothing is touched. Every file is written to a temporary name and
 * renamed into place when all are written (images first, the tasks file
 * last); the PNG encoder is libtern's own. Prints the tasks file, the images
 * directory and the seed to `out`. config_path and the overrides of `inv`
 * are not used. 0 when written; 2 for bad arguments (a message saying what
 * and how to fix), an existing file, or an OUT_DIR or OUT_DIR/images that
 * is not a directory; 1 when a file cannot be written ("PATH: cannot write:
 * <reason>"), after removing whatever this call created. */
int tern_cmd_data_shapes(const tern_invocation *inv, const tern_shapes_args *a);

/* What `tern timeline` does; build it as
 *   tern_timeline_args a = {.size = sizeof a, .run_dir = "runs/quick"};
 * (the command's defaults: the whole run, 1200 pixels wide, written to
 * RUN_DIR/timeline.svg). Members are appended only; `size` tells which this
 * caller knows. */
typedef struct tern_timeline_args {
    size_t size;            /* sizeof(tern_timeline_args) as built by the caller */
    const char *run_dir;    /* a run directory, or a trace.json file */
    const char *out_path;   /* NULL: timeline.svg beside the trace; "-": inv->out */
    long long steps;        /* > 0: end the picture where the steps-th train event
                               ends (the trainer's steps 0..steps-1); 0: no limit */
    int has_from;           /* from_s is given */
    double from_s;          /* start of the picture, seconds on the trace's clock (>= 0) */
    int has_to;             /* to_s is given (not with steps) */
    double to_s;            /* end of the picture, seconds (> from_s) */
    int width;              /* pixels, 400..20000; 0: 1200 */
} tern_timeline_args;

/* `tern timeline RUN_DIR [-o FILE] [--steps N] [--from S] [--to S] [--width PX]`:
 * draw RUN_DIR/trace.json (Chrome trace events; docs/timeline.md) as the
 * timeline diagrams of the Trinity-RFT paper, in SVG 1.1: a lane per
 * explorer ("Explorer", or "Explorer 1", "Explorer 2", ...), then "Buffer"
 * and "Trainer"; rollouts as yellow boxes and train steps as green boxes
 * with their batch numbers, weight syncs as thin purple (memory, NCCL) or
 * red (checkpoint) bars on the lane that loaded or published them, waits as
 * hatched grey bars, each batch's stay in the buffer from its put to the
 * train that takes it, publishes and stale skips on the trainer lane; a time
 * axis in seconds and a legend. The title is the run directory's name and
 * the sync plugin when summary.json or config.cfg names it. The file is
 * written to a temporary name and renamed into place; its path is printed
 * to `out` (nothing is printed but the SVG with out_path "-"). config_path
 * and the overrides of `inv` are not used. 0 when written; 2 for bad
 * arguments, a missing RUN_DIR or trace.json, a file that is not valid JSON
 * or not a trace, a trace with nothing to draw in the window (each message
 * names the file and says how to fix it); 1 when the output cannot be
 * written ("PATH: cannot write: <reason>"), leaving no file behind. */
int tern_cmd_timeline(const tern_invocation *inv, const tern_timeline_args *a);

/* What `tern plot` does; build it as
 *   const char *dirs[] = {"runs/a", "runs/b"};
 *   tern_plot_args a = {.size = sizeof a, .run_dirs = dirs, .n_runs = 2};
 * (the command's defaults: the default panels against RL steps, no
 * smoothing, each run named by its directory, written to plot.svg).
 * Members are appended only; `size` tells which this caller knows. */
typedef struct tern_plot_args {
    size_t size;                  /* sizeof(tern_plot_args) as built by the caller */
    const char *const *run_dirs;  /* run directories, or their metrics.jsonl files */
    size_t n_runs;                /* >= 1 */
    const char *out_path;         /* NULL: "plot.svg"; a name ending in .png: the SVG
                                     goes beside it (NAME.svg) and is converted */
    int png;                      /* also write the PNG (the SVG's name, .png) */
    const char *x;                /* "step" (NULL too) or "time" (wall_seconds) */
    const char *keys;             /* "k1,k2,...": one panel per key; NULL: the default
                                     panels */
    int smooth;                   /* a moving mean over this many points; 0 or 1: none */
    const char *const *labels;    /* the names of the first n_labels runs in the legend;
                                     the others are named by their directory */
    size_t n_labels;              /* <= n_runs */
    const char *title;            /* the picture's title; NULL: "Learning curves" */
} tern_plot_args;

/* `tern plot RUN_DIR... [-o FILE] [--png] [--x step|time] [--keys K,...]
 * [--smooth N] [--label NAME]... [--title TEXT]`: read each run's
 * metrics.jsonl (its RL lines) and draw learning curves, SVG 1.1: a panel
 * per key, the runs overlaid in colours named in a legend, axes with ticks
 * on round numbers. The default panels are reward_mean, eval/accuracy, kl,
 * entropy, response_length, staleness and mismatch_kl, each drawn when some
 * run has a number for it; a run that lacks a key is absent from its panel.
 * Keys under eval/ are never smoothed. A curve of more than 400 points is
 * drawn as the means of 400 buckets of consecutive points. A last line cut
 * short (a run killed mid-write) is skipped with a warning naming FILE:LINE;
 * NaN, infinite and null values are skipped with a warning. The SVG is
 * written to a temporary name and renamed; with png, `rsvg-convert`
 * (Debian: librsvg2-bin) converts it. Prints "panels: ..." and each file
 * written to `out`. config_path and the overrides of `inv` are not used.
 * 0 when written; 2 for bad arguments, a missing RUN_DIR or metrics.jsonl,
 * a file that is empty, has no RL line, a malformed line before its last
 * (FILE:LINE) or a non-numeric value of a key drawn, `x` "time" on a file
 * without wall_seconds, keys no run has; 1 when a file cannot be read or
 * written, or the PNG cannot be made (rsvg-convert missing or failing: the
 * SVG is kept). */
int tern_cmd_plot(const tern_invocation *inv, const tern_plot_args *a);

/* What `tern show` does; build it as
 *   tern_show_args a = {.size = sizeof a, .run_dir = "runs/quickstart", .step = -1};
 * Members are appended only; `size` tells which this caller knows. */
typedef struct tern_show_args {
    size_t size;         /* sizeof(tern_show_args) as built by the caller */
    const char *run_dir; /* a run directory */
    long long step;      /* the RL step shown; -1: the last that has what is shown */
    int eval;            /* the evaluation at `step` (eval_responses.jsonl), not the
                            training groups (rollouts.jsonl) */
    long long limit;     /* groups or tasks shown at most; 0: all */
    long long chars;     /* characters of a prompt or response shown at most; 0: all */
} tern_show_args;

/* `tern show RUN_DIR [--step N] [--eval] [--limit K] [--chars C]`: print, for
 * a person, the groups of one RL step that rollouts.jsonl kept whole
 * (run.keep_groups): the task's prompt and answer, then each response with
 * its reward, verdict (right, wrong, or - where no reward gives an
 * "accuracy"), length and how it ended; with `eval`, one evaluation from
 * eval_responses.jsonl: the accuracy and mean reward, then each task's
 * prompt, answer, greedy response, reward, verdict and the reward's reason.
 * Texts are JSON strings (a newline shows as 
), cut at `chars`
 * characters. A last line cut short (a run killed mid-write) is skipped
 * with a warning. 0 shown; 2 for a RUN_DIR that is not a directory, a file
 * missing or malformed before its last line, or a step without what is
 * asked (the message names the steps that have it); 1 when a file cannot be
 * read. docs/run.md, "Looking at the responses". */
int tern_cmd_show(const tern_invocation *inv, const tern_show_args *a);

/* What `tern reward score` does; build it as
 *   tern_reward_score_args a = {.size = sizeof a, .plugin = "math"};
 * Members are appended only; `size` tells which this caller knows. */
typedef struct tern_reward_score_args {
    size_t size;                /* sizeof(tern_reward_score_args) as built by the caller */
    const char *plugin;         /* the reward plugin's name (required) */
    const char *const *options; /* "key=value" settings of its config group, in order */
    size_t n_options;
    const char *plugin_dir;     /* a directory searched for plugins first; NULL: none */
    FILE *in;                   /* the cases, JSON Lines; NULL: stdin */
    size_t batch;               /* lines per score call; 0: 64 */
} tern_reward_score_args;

/* `tern reward score --plugin NAME [-o key=value]... < cases.jsonl`: start
 * the reward plugin as a run would (its settings from the options: a value
 * is typed as in a config file, and a bare word that is not a number or a
 * boolean is a string), then score every line of `in`: a task object with the
 * `response` to score (and, optionally, `response_tokens`). Each non-blank
 * line gives one line on `out`, in order: {"reward": R, <component>: V, ...,
 * "reason": "..."}, with "failed": "<why>" added when the plugin gave no
 * verdict (docs/rewards.md). The task's domain is not consulted. The options
 * `isolate` and `timeout_ms` work as in a config. A bad line (not JSON, not
 * an object, no "response" string) gives {"error": "..."} in its place and a
 * message on `err`, and the rest is scored. 0 when every line got a verdict;
 * 2 for a bad option, plugin or setting, or when some line was bad; 1 when
 * some response got no verdict ("failed"; their count goes to `err`) or for
 * a runtime failure (reading the input, out of memory). */
int tern_cmd_reward_score(const tern_invocation *inv, const tern_reward_score_args *a);

#endif /* TERN_CLI_COMMANDS_H */
