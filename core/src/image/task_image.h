/* task_image.h: a task's image as a model op gets it (docs/data.md,
 * "Images"): where the task's "image" field points, the file read whole,
 * its bytes' SHA-256 (what an experience records, so that the trainer sees
 * the pixels the explorer saw) and the pixels decoded by image_file.h, and
 * the placeholder text that marks the image's place in a prompt
 * (tern_image_spec.placeholder, ABI 1.12). */
#ifndef TERN_IMAGE_TASK_IMAGE_H
#define TERN_IMAGE_TASK_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/export.h"
#include "data/task.h"
#include "tern/model.h"

/* The largest image decoded (width x height): the vision reward's default
 * max_pixels, so a task the reward can judge a model can be given. */
#define TERN_IMAGE_MAX_PIXELS 64000000ull
/* The largest image file read (it is read whole, to hash what is decoded):
 * a binary PPM of TERN_IMAGE_MAX_PIXELS is 192 MB. */
#define TERN_IMAGE_FILE_MAX (256ull << 20)

/* The path of task t's image, as the vision reward resolves it by default:
 * the "image" field as given when absolute, else relative to the folder of
 * the tasks file the task came from (tern_task_origin), else (a task of no
 * file) to the working directory; made absolute (the working directory
 * before a relative result), since an experience records it and a resume
 * may start elsewhere. *path is malloc'd, or NULL for a task without an
 * image ("image" absent or null). TERN_EINVAL with a message
 * "the \"image\" field is a number, not the path of a PNG or PPM file" for
 * a field that is not a string or is empty; TERN_ENOMEM. */
TERN_INTERNAL int tern_task_image_path(const tern_task *t, char **path);

/* An image read for a model op: the tern_image the op is given (its rgb
 * points at `pixels`, its source at `path`), and the SHA-256 of the file's
 * bytes, the very bytes decoded. */
typedef struct tern_loaded_image {
    tern_image image;
    uint8_t *pixels;          /* owned */
    char *path;               /* owned: the path it was read from */
    unsigned char sha256[32];
} tern_loaded_image;

/* Read the file at `path` whole (a regular file of at most
 * TERN_IMAGE_FILE_MAX bytes), hash its bytes and decode them (PNG or
 * PPM/PGM, at most TERN_IMAGE_MAX_PIXELS pixels) into *out. On failure *out
 * is empty and the message is "PATH: REASON": TERN_ENOTFOUND ("cannot open:
 * No such file or directory"), TERN_EIO (cannot open or read it, not a
 * regular file), TERN_EINVAL (too big, not a PNG or PPM/PGM image, a
 * corrupt one with the decoder's reason, no pixels), TERN_ENOMEM.
 * tern_image_unload() frees it (and is harmless on an empty one). */
TERN_INTERNAL int tern_image_load(const char *path, tern_loaded_image *out);
TERN_INTERNAL void tern_image_unload(tern_loaded_image *img);

/* Occurrences of `placeholder` in `text`, not overlapping; 0 when either is
 * NULL or the placeholder is "". */
TERN_INTERNAL size_t tern_placeholder_count(const char *text, const char *placeholder);

/* The prompt text of a task with an image: NULL when `prompt` or `system`
 * (may be NULL) holds the placeholder already (the prompt is used as it is),
 * else a malloc'd placeholder + "\n" + prompt. *out_of_memory set when the
 * copy could not be made. */
TERN_INTERNAL char *tern_prompt_with_placeholder(const char *system, const char *prompt,
                                                 const char *placeholder, int *out_of_memory);

#endif
