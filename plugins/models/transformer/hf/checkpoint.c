/* checkpoint.c: saving and loading model directories (see checkpoint.h). */
#include "hf/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hf/hf_config.h"
#include "hf/safetensors.h"
#include "hf/shards.h"
#include "tern/support/paths.h"

/* Write the tensors of the layout found at `base` (the parameters, or an
 * optimizer moment with prefix "m." / "v.") into one safetensors file. */
static int write_tensors(const char *path, const llama_config *c, const float *const *bases,
                         const char *const *prefixes, size_t n_bases, const char *metadata,
                         char *err, size_t errn)
{
    size_t n = llama_tensor_count(c);
    st_write_item *items = calloc(n * n_bases, sizeof *items);
    llama_tensor_info *info = calloc(n, sizeof *info);
    char(*names)[128] = calloc(n * n_bases, sizeof *names);
    if (!items || !info || !names) {
        free(items), free(info), free(names);
        snprintf(err, errn, "%s: out of memory", path);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        llama_tensor_describe(c, i, &info[i]);
    for (size_t b = 0; b < n_bases; b++)
        for (size_t i = 0; i < n; i++) {
            size_t k = b * n + i;
            snprintf(names[k], sizeof names[k], "%s%s", prefixes[b], info[i].name);
            items[k] = (st_write_item){.name = names[k], .ndim = info[i].ndim,
                                       .shape = info[i].shape, .data = bases[b] + info[i].offset};
        }
    int rc = st_write_f32(path, items, n * n_bases, metadata, err, errn);
    free(items), free(info), free(names);
    return rc;
}

int checkpoint_save(const char *dir, const llama_model *m, const tokenizer *tok,
                    const adamw *opt, char *err, size_t errn)
{
    char path[4200];
    if (tern_make_dirs(dir, NULL, err, errn) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (hf_config_write(path, &m->cfg, err, errn) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    const float *w = m->params;
    const char *none = "";
    if (write_tensors(path, &m->cfg, &w, &none, 1, "{\"format\":\"pt\"}", err, errn) != 0)
        return -1;
    if (tokenizer_save(tok, dir, err, errn) != 0)
        return -1;
    if (opt) {
        char meta[96];
        snprintf(meta, sizeof meta, "{\"format\":\"tern-adamw\",\"step\":\"%lld\"}",
                 (long long)opt->t);
        snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
        const float *moments[2] = {opt->m, opt->v};
        const char *prefixes[2] = {"m.", "v."};
        if (write_tensors(path, &m->cfg, moments, prefixes, 2, meta, err, errn) != 0)
            return -1;
    }
    return 0;
}

/* Where read_tensors looks: the model's weight files, or one file. */
typedef struct source {
    const weight_files *w; /* or NULL: */
    const st_file *f;
    const char *path;      /* f's path */
} source;

/* The names a tensor may have on disk besides tern's: GPT-2 files saved by
 * GPT2Model (and the original gpt2 checkpoints) lack the "transformer."
 * prefix that GPT2LMHeadModel's names carry, and LLaVA files come in four
 * layouts (llava-hf's, which tern writes, and those of transformers 4.5x
 * and 5.x: "model." before the parts, no "vision_model." in the tower,
 * "language_model." without its "model."). Writes the i-th alternative of
 * `name` into out; 0 when there is none. */
static int alternative(const char *name, int i, char *out, size_t n)
{
    static const struct {
        const char *from, *to;
    } alt[] = {
        {"transformer.", ""},
        {"vision_tower.vision_model.", "vision_tower."},
        {"vision_tower.vision_model.", "model.vision_tower."},
        {"vision_tower.vision_model.", "model.vision_tower.vision_model."},
        {"multi_modal_projector.", "model.multi_modal_projector."},
        {"language_model.model.", "model.language_model."},
        {"language_model.lm_head.", "lm_head."},
    };
    int k = 0;
    for (size_t a = 0; a < sizeof alt / sizeof alt[0]; a++) {
        size_t fl = strlen(alt[a].from);
        if (strncmp(name, alt[a].from, fl) != 0)
            continue;
        if (k++ == i) {
            snprintf(out, n, "%s%s", alt[a].to, name + fl);
            return 1;
        }
    }
    return 0;
}

/* Tensor `name` under `prefix` (an optimizer moment's "m." / "v.", or ""),
 * by tern's name or an alternative: 1 found, 0 absent, -1 error (message
 * in err). */
static int find_tensor(const source *src, const char *prefix, const char *name,
                       const st_tensor **t, const char **path, char *err, size_t errn)
{
    char alt[160], full[200];
    for (int pass = 0;; pass++) {
        const char *n = name;
        if (pass > 0) {
            if (!alternative(name, pass - 1, alt, sizeof alt))
                return 0;
            n = alt;
        }
        snprintf(full, sizeof full, "%s%s", prefix, n);
        if (!src->w) {
            *path = src->path;
            if ((*t = st_find(src->f, full)))
                return 1;
            continue;
        }
        int rc = weights_find(src->w, full, t, path, err, errn);
        if (rc != 0)
            return rc;
    }
}

/* Read every tensor of the layout, named prefix + HF name, into base. */
static int read_tensors(const source *src, const llama_config *c, float *base,
                        const char *prefix, char *err, size_t errn)
{
    llama_tensor_info t;
    const char *where = src->w ? src->w->where : src->path;
    for (size_t i = 0; i < llama_tensor_count(c); i++) {
        llama_tensor_describe(c, i, &t);
        char name[128];
        snprintf(name, sizeof name, "%s%s", prefix, t.name);
        const st_tensor *st = NULL;
        const char *path = where;
        int found = find_tensor(src, prefix, t.name, &st, &path, err, errn);
        if (found < 0)
            return -1;
        if (!found) {
            snprintf(err, errn, "%s: tensor '%s' is missing%s (the config asks for %s with %d "
                     "layers%s)", where, name, src->w && src->w->map ? " from the weight_map" : "",
                     llama_arch_name(c->arch), c->n_layers,
                     c->tie_embeddings ? ", tied embeddings" : "");
            return -1;
        }
        int same = st->ndim == t.ndim;
        for (int d = 0; same && d < t.ndim; d++)
            same = st->shape[d] == t.shape[d];
        if (!same) {
            char got[96] = "", want[96] = "";
            for (int d = 0, o = 0; d < st->ndim && o < (int)sizeof got; d++)
                o += snprintf(got + o, sizeof got - (size_t)o, "%s%lld", d ? ", " : "",
                              (long long)st->shape[d]);
            for (int d = 0, o = 0; d < t.ndim && o < (int)sizeof want; d++)
                o += snprintf(want + o, sizeof want - (size_t)o, "%s%lld", d ? ", " : "",
                              (long long)t.shape[d]);
            snprintf(err, errn, "%s: tensor '%s' has shape [%s], config.json implies [%s]", path,
                     name, got, want);
            return -1;
        }
        char why[300];
        if (st_to_f32(st, base + t.offset, t.numel, why, sizeof why) != 0) {
            snprintf(err, errn, "%s: %s", path, why);
            return -1;
        }
    }
    return 0;
}

int checkpoint_load_weights(const char *dir, llama_model *m, adamw *opt, char *err, size_t errn)
{
    char path[4200];
    st_file f;
    weight_files w;
    if (weights_open(dir, &w, err, errn) != 0)
        return -1;
    source src = {.w = &w};
    int rc = read_tensors(&src, &m->cfg, m->params, "", err, errn);
    weights_close(&w);
    if (rc != 0 || !opt)
        return rc;
    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    if (st_open(path, &f, err, errn) != 0)
        return -1;
    source osrc = {.f = &f, .path = path};
    rc = read_tensors(&osrc, &m->cfg, opt->m, "m.", err, errn);
    if (rc == 0)
        rc = read_tensors(&osrc, &m->cfg, opt->v, "v.", err, errn);
    const char *step = rc == 0 ? st_metadata_get(&f, "step") : NULL;
    char *end = NULL;
    long long t = step ? strtoll(step, &end, 10) : -1;
    if (rc == 0 && (!step || *end || t < 0)) {
        snprintf(err, errn, "%s: metadata 'step' is missing or not a whole number", path);
        rc = -1;
    }
    if (rc == 0)
        opt->t = t;
    st_close(&f);
    return rc;
}
