/* preprocessor.c: preprocessor_config.json (see preprocessor.h). */
#include "hf/preprocessor.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fail.h"
#include "hf/hf_config.h"
#include "tern/support/atomic_file.h"
#include "tern/support/regular_file.h"

const float preprocessor_clip_mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
const float preprocessor_clip_std[3] = {0.26862954f, 0.26130258f, 0.27577711f};

/* The preprocessor file next to config_path, into out[n]. */
static void sibling(const char *config_path, char *out, size_t n)
{
    const char *slash = strrchr(config_path, '/');
    int dir = slash ? (int)(slash - config_path) : 1;
    snprintf(out, n, "%.*s/preprocessor_config.json", dir, slash ? config_path : ".");
}

/* A list of three numbers, key `key` of o, into out. Absent: unchanged. */
static int three(const char *path, json_t *o, const char *key, float out[3], char *err,
                 size_t errn)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (json_is_number(v)) { /* one value for every channel */
        out[0] = out[1] = out[2] = (float)json_number_value(v);
        return 0;
    }
    if (!json_is_array(v) || json_array_size(v) != 3)
        return tf_fail(err, errn, "%s: key \"%s\" must be a list of 3 numbers (R, G, B), found "
                       "%s", path, key, hf_json_kind(v));
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_array_get(v, i);
        if (!json_is_number(x))
            return tf_fail(err, errn, "%s: key \"%s\"[%zu] must be a number, found %s", path,
                           key, i, hf_json_kind(x));
        out[i] = (float)json_number_value(x);
    }
    return 0;
}

/* A bool key, absent: def. */
static int flag(const char *path, json_t *o, const char *key, int def, int *out, char *err,
                size_t errn)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (!json_is_boolean(v))
        return tf_fail(err, errn, "%s: key \"%s\" must be true or false, found %s", path, key,
                       hf_json_kind(v));
    *out = json_is_true(v);
    return 0;
}

int preprocessor_read(const char *config_path, llama_vision *v, char *err, size_t errn)
{
    char path[4096];
    sibling(config_path, path, sizeof path);
    memcpy(v->mean, preprocessor_clip_mean, sizeof v->mean);
    memcpy(v->std, preprocessor_clip_std, sizeof v->std);
    v->crop = 1;
    char *text, why[TERN_REGULAR_WHY_MAX];
    size_t len;
    if (tern_regular_read(path, HF_JSON_MAX, &text, &len, why, sizeof why) != 0) {
        if (errno == ENOENT)
            return 0; /* CLIPImageProcessor's defaults */
        return tf_fail(err, errn, "%s: cannot read: %s", path, why);
    }
    json_error_t jerr;
    json_t *o = json_loadb(text, len, 0, &jerr);
    free(text);
    if (!o)
        return tf_fail(err, errn, "%s:%d:%d: not a valid JSON file: %s", path, jerr.line,
                       jerr.column, jerr.text);
    int rc = -1, normalize = 1, rescale = 1, convert = 1;
    json_t *rf = json_object_get(o, "rescale_factor");
    if (!json_is_object(o)) {
        tf_fail(err, errn, "%s: must hold a JSON object, found %s", path, hf_json_kind(o));
    } else if (three(path, o, "image_mean", v->mean, err, errn) == 0 &&
               three(path, o, "image_std", v->std, err, errn) == 0 &&
               flag(path, o, "do_normalize", 1, &normalize, err, errn) == 0 &&
               flag(path, o, "do_rescale", 1, &rescale, err, errn) == 0 &&
               flag(path, o, "do_convert_rgb", 1, &convert, err, errn) == 0 &&
               flag(path, o, "do_center_crop", 1, &v->crop, err, errn) == 0) {
        if (!rescale || !convert)
            tf_fail(err, errn, "%s: key \"%s\" is false; tern feeds RGB pixels scaled to 0..1",
                    path, rescale ? "do_convert_rgb" : "do_rescale");
        else if (rf && (!json_is_number(rf) || fabs(json_number_value(rf) - 1.0 / 255) > 1e-9))
            tf_fail(err, errn, "%s: key \"rescale_factor\" must be 1/255 (0.00392156862745098); "
                    "tern scales 8-bit pixels to 0..1", path);
        else
            rc = 0;
        if (rc == 0 && !normalize) {
            v->mean[0] = v->mean[1] = v->mean[2] = 0;
            v->std[0] = v->std[1] = v->std[2] = 1;
        }
        for (int ch = 0; rc == 0 && ch < 3; ch++)
            if (!(v->std[ch] > 0))
                rc = tf_fail(err, errn, "%s: key \"image_std\"[%d] is %g; it must be > 0", path,
                             ch, (double)v->std[ch]);
    }
    json_decref(o);
    return rc;
}

int preprocessor_write(const char *config_path, const llama_vision *v, char *err, size_t errn)
{
    char path[4096];
    sibling(config_path, path, sizeof path);
    /* resample 2: bilinear, what tern's resize does */
    json_t *o = json_pack(
        "{s:s, s:s, s:b, s:{s:i}, s:i, s:b, s:{s:i, s:i}, s:b, s:f, s:b, s:[f, f, f], "
        "s:[f, f, f], s:b}", "image_processor_type", "CLIPImageProcessor", "processor_class",
        "LlavaProcessor", "do_resize", 1, "size", "shortest_edge", v->image, "resample", 2,
        "do_center_crop", v->crop != 0, "crop_size", "height", v->image, "width", v->image,
        "do_rescale", 1, "rescale_factor", 1.0 / 255, "do_normalize", 1, "image_mean",
        (double)v->mean[0], (double)v->mean[1], (double)v->mean[2], "image_std",
        (double)v->std[0], (double)v->std[1], (double)v->std[2], "do_convert_rgb", 1);
    char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(9))
                   : NULL;
    json_decref(o);
    if (!text)
        return tf_fail(err, errn, "%s: out of memory", path);
    size_t len = strlen(text);
    char *buf = realloc(text, len + 2);
    if (!buf) {
        free(text);
        return tf_fail(err, errn, "%s: out of memory", path);
    }
    buf[len] = '\n';
    int rc = tern_atomic_file_put(path, buf, len + 1, err, errn);
    free(buf);
    return rc;
}
