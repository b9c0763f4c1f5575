/* cmd_model.c: `tern model init`, `tern generate` and `tern score`
 * (tern/libtern.h): drive one model plugin through its ops table.
 *
 * Each command writes the model slot a config would hold ("model = { plugin
 * = ...; path = ...; };" or "... init = { preset = ...; };"), opens a session
 * on that text (the same checks and start as `tern check`: the plugin found
 * on the search path, its settings checked against its spec, create() run),
 * then calls the model's ops. Strings are escaped for libconfig, so any path
 * or preset reaches the plugin unchanged. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model.h"
#include "model/model_open.h"
#include "base/errmsg.h"
#include "image/task_image.h"
#include "flag_config.h"
#include "tern/support/utf8.h"
#include "base/log.h"
#include "tern/support/paths.h"
#include "host/session.h"
#include "cmd_io.h"
#include "commands.h"
#include "tern/libtern.h"
#include "tern/model.h"

#define DEFAULT_PLUGIN "transformer"

static int bad_invocation(const tern_invocation *inv)
{
    return !inv || inv->size < sizeof(tern_invocation);
}

/* Tokenize text_len bytes with BOS; returns an exit code, the ids in *ids
 * (freed with free()). */
static int tokenize(const tern_invocation *inv, const char *label, cli_model *m, const char *what,
                    const char *text, size_t text_len, int32_t **ids, size_t *n)
{
    char context[64];
    snprintf(context, sizeof context, "the model cannot tokenize the %s", what);
    int rc = tern_model_tokenize(&m->px, context, text, text_len, 1, ids, n);
    if (rc != TERN_OK) {
        cmd_report(inv, label, "%s", tern_error_message());
        return cli_exit_code(rc);
    }
    return TERN_EXIT_OK;
}

/* The prompt as a user turn (after `system`, may be NULL) through the model's
 * chat template; returns an exit code, the ids in *ids (freed with free()),
 * and the model's EOS in *eos (-1 when it tells none). */
static int encode_chat(const tern_invocation *inv, const char *label, cli_model *m,
                       const char *system, const char *prompt, int32_t **ids, size_t *n,
                       int32_t *eos)
{
    *ids = NULL;
    *n = 0;
    *eos = -1;
    if (!tern_model_has_chat(&m->px)) {
        cmd_report(inv, label,
                   "the model plugin has no chat template (the encode_chat op of ABI "
                   "1.4): leave out --chat and --system");
        return TERN_EXIT_USAGE;
    }
    int rc = tern_model_chat(&m->px, "the model cannot format the prompt with its chat template",
                             system, prompt, ids, n);
    if (rc != TERN_OK) {
        cmd_report(inv, label, "%s", tern_error_message());
        return cli_exit_code(rc);
    }
    tern_special_tokens sp;
    if (tern_model_special(&m->px, "special tokens", &sp) == TERN_OK)
        *eos = sp.eos;
    return TERN_EXIT_OK;
}

/* ---- tern model init ------------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    if (ftw->level == 0)
        return 0; /* the directory itself: rmdir'ed only if this call made it */
    remove(path);
    return 0;
}

/* Undo a failed init: OUT_DIR was absent or empty, so whatever is in it now
 * the plugin wrote; then the directories this call created, innermost first. */
static void undo_init(const char *out_dir, const tern_made_dirs *made)
{
    nftw(out_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    tern_made_dirs_remove(made);
}

/* OUT_DIR must be absent or an empty directory. */
static int check_out_dir(const tern_invocation *inv, const char *label, const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        int e = errno;
        if (e == ENOENT)
            return TERN_EXIT_OK;
        cmd_report(inv, label, "%s: cannot use it: %s", dir, strerror(e));
        return e == ENOTDIR ? TERN_EXIT_USAGE : TERN_EXIT_FAILURE;
    }
    if (!S_ISDIR(st.st_mode)) {
        cmd_report(inv, label,
                   "%s: exists and is not a directory; give a new directory (nothing "
                   "is ever overwritten)",
                   dir);
        return TERN_EXIT_USAGE;
    }
    int empty = cmd_dir_is_empty(dir);
    if (empty < 0) {
        int e = errno;
        cmd_report(inv, label, "%s: cannot read it: %s", dir, strerror(e));
        return TERN_EXIT_FAILURE;
    }
    if (!empty) {
        cmd_report(inv, label,
                   "%s: exists and is not empty; give a new or empty directory "
                   "(nothing is ever overwritten)",
                   dir);
        return TERN_EXIT_USAGE;
    }
    return TERN_EXIT_OK;
}

/* Print "  NAME" for each entry of dir, in name order. */
static void list_dir(FILE *out, const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.')
            fprintf(out, "  %s\n", names[i]->d_name);
        free(names[i]);
    }
    free(names);
}

/* Save the open model m (`what`: "new", "converted") to out_dir, checked
 * absent or empty again (opening may take a while), removing what was made
 * on failure. Returns an exit code. */
static int save_new_dir(const tern_invocation *inv, const char *label, cli_model *m,
                        const char *out_dir, const char *what)
{
    int code = check_out_dir(inv, label, out_dir);
    if (code != TERN_EXIT_OK)
        return code;
    tern_made_dirs made = {.n = 0};
    if (tern_make_dirs(out_dir, &made, NULL, 0) != 0) {
        cmd_report(inv, label, "%s: cannot create directory: %s", out_dir, strerror(errno));
        undo_init(out_dir, &made);
        tern_made_dirs_free(&made);
        return TERN_EXIT_FAILURE;
    }
    char context[PATH_MAX + 64];
    snprintf(context, sizeof context, "saving the %s model to %s failed", what, out_dir);
    int rc = tern_model_save(&m->px, context, out_dir, 0);
    if (rc != TERN_OK) {
        cmd_report(inv, label, "%s", tern_error_message());
        undo_init(out_dir, &made);
        code = cli_exit_code(rc) == TERN_EXIT_USAGE ? TERN_EXIT_FAILURE : cli_exit_code(rc);
    }
    tern_made_dirs_free(&made);
    return code;
}

int tern_cmd_model_convert(const tern_invocation *inv, const char *plugin, const char *model_path,
                           const char *out_dir)
{
    const char *label = "tern model convert";
    if (bad_invocation(inv))
        return TERN_EXIT_USAGE;
    if (!plugin)
        plugin = DEFAULT_PLUGIN;
    int code = cli_check_model_dir(inv, label, model_path);
    if (code == TERN_EXIT_OK)
        code = check_out_dir(inv, label, out_dir);
    if (code != TERN_EXIT_OK)
        return code;
    cli_model m;
    code = cli_model_open(inv, label, plugin, model_path, NULL, -1, 0, &m);
    if (code == TERN_EXIT_OK)
        code = cli_check_weights_finite(inv, label, &m, model_path);
    if (code == TERN_EXIT_OK)
        code = save_new_dir(inv, label, &m, out_dir, "converted");
    if (code == TERN_EXIT_OK) {
        FILE *out = cmd_out(inv);
        fprintf(out, "%s: %s converted by plugin %s\n", out_dir, model_path, plugin);
        list_dir(out, out_dir);
    }
    cli_model_close(&m);
    return code;
}

int tern_cmd_model_init(const tern_invocation *inv, const char *plugin, const char *preset,
                        long long seed, const char *out_dir)
{
    const char *label = "tern model init";
    if (bad_invocation(inv))
        return TERN_EXIT_USAGE;
    if (!plugin)
        plugin = DEFAULT_PLUGIN;
    if (!preset || !*preset || !out_dir || !*out_dir || !*plugin) {
        cmd_report(inv, label, "needs a plugin, a preset and an output directory");
        return TERN_EXIT_USAGE;
    }
    int code = check_out_dir(inv, label, out_dir);
    if (code != TERN_EXIT_OK)
        return code;

    cli_model m;
    code = cli_model_open(inv, label, plugin, NULL, preset, seed, 0, &m);
    if (code == TERN_EXIT_OK)
        code = save_new_dir(inv, label, &m, out_dir, "new");
    if (code == TERN_EXIT_OK) {
        long long used = seed;
        config_lookup_int64(&m.s.config.cfg, "model.init.seed", &used);
        FILE *out = cmd_out(inv);
        if (used >= 0)
            fprintf(out, "%s: new model, preset %s, seed %lld, plugin %s\n", out_dir, preset,
                    used, plugin);
        else
            fprintf(out, "%s: new model, preset %s, plugin %s\n", out_dir, preset, plugin);
        list_dir(out, out_dir);
    }
    cli_model_close(&m);
    return code;
}

/* ---- tern generate --------------------------------------------------------- */

static int check_generate_args(const tern_invocation *inv, const char *label,
                               const tern_generate_args *a)
{
    const char *problem = NULL;
    if (!a->model_dir || !*a->model_dir)
        problem = "needs a model directory";
    else if (!a->prompt && a->prompt_len > 0)
        problem = "needs a prompt (prompt is NULL)";
    else if (a->max_tokens < 1)
        problem = "max_tokens must be at least 1";
    else if (a->samples < 1)
        problem = "samples must be at least 1";
    else if (!(a->temperature >= 0) || !isfinite(a->temperature))
        problem = "temperature must be a number >= 0 (0 is greedy)";
    else if (a->top_k < 0)
        problem = "top_k must be >= 0 (0 is off)";
    else if (!(a->top_p > 0 && a->top_p <= 1))
        problem = "top_p must be in (0, 1] (1 is off)";
    else if (a->n_stop > 0 && !a->stop)
        problem = "stop is NULL with n_stop > 0";
    else if (a->size >= offsetof(tern_generate_args, system) + sizeof a->system && a->system &&
             !a->chat)
        problem = "a system turn needs chat (--chat): only a chat template has one";
    if (problem) {
        cmd_report(inv, label, "%s", problem);
        return TERN_EXIT_USAGE;
    }
    return TERN_EXIT_OK;
}

/* --image FILE (NULL: none), as a run gives a task's image: the model must
 * read images (image_spec, ABI 1.12) and take the file (read, decoded, its
 * size checked where the model's fit is exact) into *img; *text is then the
 * prompt to encode (malloc'd): the model's placeholder and a newline before
 * it when neither it nor the system turn holds one, one placeholder at most.
 * Without --image, a prompt holding the placeholder of a model that reads
 * images is refused (its image tokens would have no image); *text stays
 * NULL (the prompt as given). Returns an exit code. */
static int image_prompt(const tern_invocation *inv, const char *label, cli_model *m,
                        const char *file, const char *system, const char *prompt,
                        size_t prompt_len, tern_loaded_image *img, char **text)
{
    *text = NULL;
    tern_image_spec spec;
    int rc = tern_model_image_spec(&m->px, "the model cannot say how it reads images", &spec);
    if (rc != TERN_OK && rc != TERN_EUNSUPPORTED) {
        cmd_report(inv, label, "%s", tern_error_message());
        return TERN_EXIT_FAILURE;
    }
    int reads = rc == TERN_OK;
    const char *ph = spec.placeholder;
    if (!file) {
        if (reads && (memmem(prompt, prompt_len, ph, strlen(ph)) ||
                      tern_placeholder_count(system, ph))) {
            cmd_report(inv, label, "the prompt holds the model's image placeholder \"%s\" and "
                       "no image is given: give one with --image FILE, or remove the "
                       "placeholder", ph);
            return TERN_EXIT_USAGE;
        }
        return TERN_EXIT_OK;
    }
    if (!reads) {
        int op = TERN_HAS(m->px.ops, image_spec) && m->px.ops->image_spec;
        cmd_report(inv, label, "model plugin '%s' reads text only (%s): --image needs a model "
                   "that reads images (docs/data.md, \"Images\")", m->px.plugin,
                   op ? "its image_spec op says this model has no image encoder"
                      : "no image_spec op, ABI 1.12");
        return TERN_EXIT_USAGE;
    }
    if ((rc = tern_image_load(file, img)) != TERN_OK) {
        cmd_report(inv, label, "--image %s; give a PNG or PPM/PGM image", tern_error_message());
        return rc == TERN_ENOMEM ? TERN_EXIT_FAILURE : TERN_EXIT_USAGE;
    }
    if (spec.fit == TERN_IMAGE_FIT_EXACT &&
        (img->image.width != spec.width || img->image.height != spec.height)) {
        cmd_report(inv, label, "--image %s is %dx%d, and model plugin '%s' takes %dx%d images "
                   "only (its encoder's size): resize the image, or use the model with "
                   "image_fit = \"resize\" to have it resize it", file, img->image.width,
                   img->image.height, m->px.plugin, spec.width, spec.height);
        return TERN_EXIT_USAGE;
    }
    char *p = strndup(prompt, prompt_len);
    if (!p) {
        cmd_report(inv, label, "out of memory");
        return TERN_EXIT_FAILURE;
    }
    size_t marks = tern_placeholder_count(p, ph) + tern_placeholder_count(system, ph);
    if (marks > 1) {
        cmd_report(inv, label, "the prompt holds %zu image placeholders (\"%s\") and one image "
                   "is given (--image): keep one, or none (one is put before the prompt)",
                   marks, ph);
        free(p);
        return TERN_EXIT_USAGE;
    }
    int oom = 0;
    *text = tern_prompt_with_placeholder(system, p, ph, &oom);
    if (*text || oom)
        free(p);
    else
        *text = p; /* it holds its placeholder: as it is */
    if (oom) {
        cmd_report(inv, label, "out of memory");
        return TERN_EXIT_FAILURE;
    }
    return TERN_EXIT_OK;
}

int tern_cmd_generate(const tern_invocation *inv, const tern_generate_args *a)
{
    const char *label = "tern generate";
    if (bad_invocation(inv) || !a || a->size < sizeof(tern_generate_args))
        return TERN_EXIT_USAGE;
    int code = check_generate_args(inv, label, a);
    if (code == TERN_EXIT_OK)
        code = cli_check_model_dir(inv, label, a->model_dir);
    if (code != TERN_EXIT_OK)
        return code;
    cli_model m;
    code = cli_model_open(inv, label, a->plugin, a->model_dir, NULL, -1, a->threads, &m);
    if (code == TERN_EXIT_OK)
        code = cli_check_weights_finite(inv, label, &m, a->model_dir);

    int32_t *ids = NULL, *stop = NULL;
    size_t n_ids = 0, n_stop = a->n_stop;
    int chat = a->size >= offsetof(tern_generate_args, system) + sizeof a->system && a->chat;
    const char *file = a->size >= offsetof(tern_generate_args, image) + sizeof a->image
                           ? a->image
                           : NULL;
    tern_loaded_image img;
    memset(&img, 0, sizeof img);
    char *marked = NULL; /* the prompt with the image's placeholder, or NULL */
    if (code == TERN_EXIT_OK)
        code = image_prompt(inv, label, &m, file, chat ? a->system : NULL,
                            a->prompt ? a->prompt : "", a->prompt_len, &img, &marked);
    const char *text = marked ? marked : a->prompt ? a->prompt : "";
    size_t text_len = marked ? strlen(marked) : a->prompt_len;
    if (code == TERN_EXIT_OK && chat) {
        /* the template's text is NUL-terminated: the prompt must be too */
        char *prompt = strndup(text, text_len);
        stop = malloc((a->n_stop + 1) * sizeof *stop);
        int32_t eos = -1;
        if (!prompt || !stop) {
            cmd_report(inv, label, "out of memory");
            code = TERN_EXIT_FAILURE;
        } else {
            code = encode_chat(inv, label, &m, a->system, prompt, &ids, &n_ids, &eos);
        }
        free(prompt);
        if (code == TERN_EXIT_OK) {
            if (a->n_stop)
                memcpy(stop, a->stop, a->n_stop * sizeof *stop);
            if (eos >= 0) /* the assistant's turn ends there */
                stop[n_stop++] = eos;
        }
    } else if (code == TERN_EXIT_OK) {
        code = tokenize(inv, label, &m, "prompt", text, text_len, &ids, &n_ids);
    }

    tern_gen_output *outs = NULL;
    size_t n_outs = 0; /* outputs the model filled (to free) */
    if (code == TERN_EXIT_OK) {
        outs = calloc(a->samples, sizeof *outs);
        if (!outs) {
            cmd_report(inv, label, "out of memory for %u samples", a->samples);
            code = TERN_EXIT_FAILURE;
        }
    }
    if (code == TERN_EXIT_OK) {
        for (uint32_t i = 0; i < a->samples; i++)
            outs[i].size = sizeof outs[i];
        tern_gen_request req = {
            .size = sizeof req,
            .prompt = ids,
            .prompt_len = n_ids,
            .n_samples = a->samples,
            .max_new_tokens = a->max_tokens,
            .temperature = (float)a->temperature,
            .top_k = a->top_k,
            .top_p = (float)a->top_p,
            .stop = chat ? stop : a->stop,
            .n_stop = n_stop,
            .seed = a->seed,
            .images = img.pixels ? &img.image : NULL,
            .n_images = img.pixels ? 1 : 0,
        };
        int rc = tern_model_generate(&m.px, "generation failed", &req, 1, outs);
        if (rc != TERN_OK) {
            /* A failing generate hands nothing over (it frees what it made). */
            cmd_report(inv, label, "%s", tern_error_message());
            code = cli_exit_code(rc);
        } else {
            n_outs = a->samples;
        }
    }
    FILE *out = cmd_out(inv);
    for (size_t i = 0; code == TERN_EXIT_OK && i < n_outs; i++) {
        char *s = NULL;
        size_t s_len = 0;
        char context[64];
        snprintf(context, sizeof context, "the model cannot detokenize sample %zu", i + 1);
        int rc = tern_model_text(&m.px, context, outs[i].tokens, outs[i].len, &s, &s_len);
        if (rc != TERN_OK) {
            cmd_report(inv, label, "%s", tern_error_message());
            code = cli_exit_code(rc) == TERN_EXIT_USAGE ? TERN_EXIT_FAILURE : cli_exit_code(rc);
            break;
        }
        if (a->samples > 1) {
            double lp = 0;
            for (size_t t = 0; t < outs[i].len; t++)
                lp += outs[i].logprobs ? outs[i].logprobs[t] : 0.0;
            fprintf(out, "--- sample %zu (%zu tokens, logprob %.6f) ---\n", i + 1, outs[i].len,
                    lp);
        }
        if (s_len)
            fwrite(s, 1, s_len, out);
        fputc('\n', out);
        free(s);
    }
    tern_model_release_outputs(&m.px, outs, n_outs);
    free(outs);
    free(stop);
    free(ids);
    free(marked);
    tern_image_unload(&img);
    if (code == TERN_EXIT_OK && fflush(out) != 0) {
        cmd_report(inv, label, "cannot write the output: %s", strerror(errno));
        code = TERN_EXIT_FAILURE;
    }
    cli_model_close(&m);
    return code;
}

/* ---- tern score ------------------------------------------------------------ */

/* Write a token's text on one line: \n, \t and \\ escaped, other control
 * bytes and bytes outside valid UTF-8 as \xNN. */
static void put_escaped(FILE *out, const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        if (c == '\n')
            fputs("\\n", out);
        else if (c == '\t')
            fputs("\\t", out);
        else if (c == '\\')
            fputs("\\\\", out);
        else if (c >= 0x20 && c < 0x7f)
            fputc(c, out);
        else if (c >= 0x80) {
            size_t u = tern_utf8_len(s + i, len - i);
            if (u) {
                fwrite(s + i, 1, u, out);
                i += u;
                continue;
            }
            fprintf(out, "\\x%02x", c);
        } else
            fprintf(out, "\\x%02x", c);
        i++;
    }
}

int tern_cmd_score(const tern_invocation *inv, const tern_score_args *a)
{
    const char *label = "tern score";
    if (bad_invocation(inv) || !a || a->size < sizeof(tern_score_args))
        return TERN_EXIT_USAGE;
    if (!a->model_dir || !*a->model_dir || (!a->text && a->text_len > 0)) {
        cmd_report(inv, label, "needs a model directory and a text");
        return TERN_EXIT_USAGE;
    }
    int code = cli_check_model_dir(inv, label, a->model_dir);
    if (code != TERN_EXIT_OK)
        return code;
    cli_model m;
    code = cli_model_open(inv, label, a->plugin, a->model_dir, NULL, -1, a->threads, &m);
    if (code == TERN_EXIT_OK)
        code = cli_check_weights_finite(inv, label, &m, a->model_dir);

    int32_t *ids = NULL;
    size_t n = 0;
    if (code == TERN_EXIT_OK)
        code = tokenize(inv, label, &m, "text", a->text ? a->text : "", a->text_len, &ids, &n);
    if (code == TERN_EXIT_OK && n < 2) {
        cmd_report(inv, label, "the text gives no token to score after BOS; give a longer --text");
        code = TERN_EXIT_USAGE;
    }
    float *lp = NULL, *ent = NULL;
    if (code == TERN_EXIT_OK) {
        lp = calloc(n, sizeof *lp);
        ent = calloc(n, sizeof *ent);
        if (!lp || !ent) {
            cmd_report(inv, label, "out of memory for %zu tokens", n);
            code = TERN_EXIT_FAILURE;
        }
    }
    /* score() writes into arrays the caller provides (tern/model.h) */
    float *lps[1] = {lp}, *ents[1] = {ent};
    if (code == TERN_EXIT_OK) {
        tern_sequence seq = {.size = sizeof seq, .tokens = ids, .len = n, .start = 1};
        int rc = tern_model_score(&m.px, "scoring failed", &seq, 1, lps, ents);
        if (rc != TERN_OK) {
            cmd_report(inv, label, "%s", tern_error_message());
            code = cli_exit_code(rc);
        }
    }
    FILE *out = cmd_out(inv);
    double total = 0;
    const float *lpv = lp, *entv = ent;
    for (size_t i = 1; code == TERN_EXIT_OK && i < n; i++) {
        char *s = NULL;
        size_t s_len = 0;
        char context[96];
        snprintf(context, sizeof context, "the model cannot detokenize token %d at position %zu",
                 (int)ids[i], i);
        int rc = tern_model_text(&m.px, context, &ids[i], 1, &s, &s_len);
        if (rc != TERN_OK) {
            cmd_report(inv, label, "%s", tern_error_message());
            code = TERN_EXIT_FAILURE;
            break;
        }
        fprintf(out, "%zu\t%d\t", i, (int)ids[i]);
        put_escaped(out, s, s_len);
        fprintf(out, "\t%.6f\t%.6f\n", (double)lpv[i], (double)entv[i]);
        free(s);
        total += lpv[i];
    }
    if (code == TERN_EXIT_OK)
        fprintf(out, "total logprob %.6f over %zu tokens, perplexity %.6f\n", total, n - 1,
                exp(-total / (double)(n - 1)));
    free(lp);
    free(ent);
    free(ids);
    if (code == TERN_EXIT_OK && fflush(out) != 0) {
        cmd_report(inv, label, "cannot write the output: %s", strerror(errno));
        code = TERN_EXIT_FAILURE;
    }
    cli_model_close(&m);
    return code;
}
