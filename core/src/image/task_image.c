/* task_image.c: a task's image for a model op (see task_image.h). */
#include "image/task_image.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errmsg.h"
#include "base/sha256.h"
#include "image/image_file.h"
#include "tern/support/regular_file.h"

#include <unistd.h>

int tern_task_image_path(const tern_task *t, char **path)
{
    *path = NULL;
    const char *type = tern_task_type(t, "image");
    if (!type || strcmp(type, "null") == 0)
        return TERN_OK;
    const char *rel = tern_task_string(t, "image");
    if (!rel || !rel[0]) {
        const char *article = rel ? "" : strchr("aeiou", type[0]) ? "an " : "a ";
        return tern_errorf(TERN_EINVAL, "the \"image\" field is %s%s, not the path of a PNG or "
                           "PPM file", article, rel ? "\"\"" : type);
    }
    /* relative to the tasks file's folder, as the vision reward reads it
     * (its image_root unset), so that the reward and the model see one file */
    const char *origin = rel[0] == '/' ? NULL : tern_task_origin(t);
    const char *slash = origin ? strrchr(origin, '/') : NULL;
    size_t base = slash ? (slash == origin ? 1 : (size_t)(slash - origin)) : 0;
    /* and made absolute: an experience records it, and a resume may start
     * from another working directory */
    char cwd[PATH_MAX] = "";
    int from_cwd = rel[0] != '/' && !(base && origin[0] == '/');
    if (from_cwd && !getcwd(cwd, sizeof cwd))
        cwd[0] = '\0'; /* unknown: left relative */
    size_t n = strlen(rel), total = strlen(cwd) + 1 + base + 1 + n + 1;
    char *p = malloc(total);
    if (!p)
        return tern_errorf(TERN_ENOMEM, "out of memory");
    snprintf(p, total, "%s%s%.*s%s%s", cwd, cwd[0] && strcmp(cwd, "/") != 0 ? "/" : "",
             (int)base, base ? origin : "", base && origin[base - 1] != '/' ? "/" : "", rel);
    *path = p;
    return TERN_OK;
}

/* A decoder status as a tern status. */
static int status_of(image_file_status s)
{
    switch (s) {
    case IMAGE_FILE_NOT_FOUND:
        return TERN_ENOTFOUND;
    case IMAGE_FILE_UNREADABLE:
        return TERN_EIO;
    case IMAGE_FILE_NO_MEMORY:
        return TERN_ENOMEM;
    default:
        return TERN_EINVAL;
    }
}

int tern_image_load(const char *path, tern_loaded_image *out)
{
    memset(out, 0, sizeof *out);
    char why[TERN_REGULAR_WHY_MAX];
    char *bytes = NULL;
    size_t len = 0;
    /* the file whole: the digest is of the very bytes decoded, so a file
     * rewritten between the two cannot pair one's hash with the other's pixels */
    if (tern_regular_read(path, TERN_IMAGE_FILE_MAX, &bytes, &len, why, sizeof why) != 0) {
        int e = errno;
        if (e == ENOMEM)
            return tern_errorf(TERN_ENOMEM, "%s: out of memory reading the image", path);
        return tern_errorf(e == ENOENT || e == ENOTDIR ? TERN_ENOTFOUND
                           : e == EFBIG               ? TERN_EINVAL
                                                      : TERN_EIO,
                           "%s: cannot %s: %s", path, e == EFBIG ? "read" : "open", why);
    }
    tern_sha256 h;
    tern_sha256_init(&h);
    tern_sha256_update(&h, bytes, len);
    tern_sha256_digest(&h, out->sha256);
    image_rgb img;
    char reason[160];
    image_file_status s = image_file_decode((const uint8_t *)bytes, len, TERN_IMAGE_MAX_PIXELS,
                                            IMAGE_FILE_PIXELS, &img, reason, sizeof reason);
    free(bytes);
    if (s != IMAGE_FILE_OK)
        return tern_errorf(status_of(s), "%s: %s", path, reason);
    if (!(out->path = strdup(path))) {
        image_rgb_free(&img);
        memset(out, 0, sizeof *out);
        return tern_errorf(TERN_ENOMEM, "out of memory");
    }
    out->pixels = img.rgb;
    out->image = (tern_image){.size = sizeof out->image, .width = (int32_t)img.w,
                              .height = (int32_t)img.h, .rgb = out->pixels, .source = out->path};
    return TERN_OK;
}

void tern_image_unload(tern_loaded_image *img)
{
    if (!img)
        return;
    free(img->pixels);
    free(img->path);
    memset(img, 0, sizeof *img);
}

size_t tern_placeholder_count(const char *text, const char *placeholder)
{
    if (!text || !placeholder || !placeholder[0])
        return 0;
    size_t n = 0, k = strlen(placeholder);
    for (const char *p = strstr(text, placeholder); p; p = strstr(p + k, placeholder))
        n++;
    return n;
}

char *tern_prompt_with_placeholder(const char *system, const char *prompt,
                                   const char *placeholder, int *out_of_memory)
{
    *out_of_memory = 0;
    if (tern_placeholder_count(prompt, placeholder) || tern_placeholder_count(system, placeholder))
        return NULL;
    size_t n = strlen(placeholder) + 1 + strlen(prompt) + 1;
    char *p = malloc(n);
    if (!p) {
        *out_of_memory = 1;
        return NULL;
    }
    snprintf(p, n, "%s\n%s", placeholder, prompt);
    return p;
}
