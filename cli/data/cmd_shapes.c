/* cmd_shapes.c: `tern data shapes` (tern/libtern.h): write synthetic
 * pictures (data/shapes.h) as PNG files (data/png_write.h) and the vision
 * tasks about them into a directory, never over a file that is there. Every
 * file is written to a temporary name and renamed into place once all of
 * them are written; on failure whatever this call created is removed. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/png_write.h"
#include "data/shapes.h"
#include "tern/support/atomic_file.h"
#include "tern/support/paths.h"
#include "tern/host.h"
#include "cmd_io.h"
#include "commands.h"
#include "tern/libtern.h"

#define LABEL "tern data shapes"
#define TASKS_FILE "shapes.jsonl"
#define IMAGES_DIR "images"
#define N_MAX 100000ull
/* Existing files named one by one before "and N more". */
#define EXISTING_SHOWN 3

static int digits(unsigned long long n)
{
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

/* The files of one call: the tasks file and every image, with their
 * temporary names while they are being written. */
typedef struct plan {
    char *tasks;
    tern_atomic_file tasks_file; /* open until publish() renames it */
    char *images_dir;
    char **images, **images_tmp;
    size_t n;
    int width;        /* digits of the numbers in names and ids */
    size_t renamed;   /* images renamed into place so far */
} plan;

static void plan_free(plan *p)
{
    for (size_t i = 0; p->images && i < p->n; i++)
        free(p->images[i]);
    for (size_t i = 0; p->images_tmp && i < p->n; i++)
        free(p->images_tmp[i]);
    free(p->images);
    free(p->images_tmp);
    free(p->tasks);
    free(p->images_dir);
}

/* v with leading zeros to `width` digits (at most 20), in a static buffer
 * read at once by the caller. */
static const char *padded(size_t v, int width)
{
    static _Thread_local char buf[24];
    char digits_buf[24];
    int n = snprintf(digits_buf, sizeof digits_buf, "%zu", v);
    int zeros = width > n ? width - n : 0;
    if (zeros > 20 - n)
        zeros = 20 - n;
    memset(buf, '0', (size_t)zeros);
    memcpy(buf + zeros, digits_buf, (size_t)n + 1);
    return buf;
}

static int plan_make(plan *p, const char *out_dir, size_t n)
{
    memset(p, 0, sizeof *p);
    tern_atomic_file_init(&p->tasks_file);
    p->n = n;
    p->width = digits(n) > 5 ? digits(n) : 5;
    p->tasks = tern_path_join(out_dir, TASKS_FILE);
    p->images_dir = tern_path_join(out_dir, IMAGES_DIR);
    p->images = calloc(n, sizeof *p->images);
    p->images_tmp = calloc(n, sizeof *p->images_tmp);
    if (!p->tasks || !p->images_dir || !p->images || !p->images_tmp)
        return -1;
    for (size_t i = 0; i < n; i++) {
        char name[48];
        snprintf(name, sizeof name, "shape-%s.png", padded(i + 1, p->width));
        if (!(p->images[i] = tern_path_join(p->images_dir, name)))
            return -1;
    }
    return 0;
}

/* OUT_DIR and OUT_DIR/images must be directories or absent, and none of the
 * files may exist. */
static int check_targets(const tern_invocation *inv, const char *dir, const plan *p)
{
    struct stat st;
    const char *dirs[2] = {dir, p->images_dir};
    for (int i = 0; i < 2; i++) {
        if (stat(dirs[i], &st) == 0) {
            if (!S_ISDIR(st.st_mode)) {
                cmd_report(inv, LABEL,
                           "%s: exists and is not a directory; give a directory for the tasks "
                           "and images (it is created if missing)",
                           dirs[i]);
                return TERN_EXIT_USAGE;
            }
        } else if (errno == ENOTDIR) {
            cmd_report(inv, LABEL, "%s: cannot be a directory: %s; give another OUT_DIR", dirs[i],
                       strerror(errno));
            return TERN_EXIT_USAGE;
        } else if (errno != ENOENT) {
            cmd_report(inv, LABEL, "%s: cannot use it: %s", dirs[i], strerror(errno));
            return TERN_EXIT_FAILURE;
        } else {
            break; /* absent: nothing inside it exists */
        }
    }
    int code = TERN_EXIT_OK;
    if (lstat(p->tasks, &st) == 0) {
        cmd_report(inv, LABEL,
                   "%s: exists; nothing is ever overwritten: remove it or give another OUT_DIR",
                   p->tasks);
        code = TERN_EXIT_USAGE;
    }
    size_t existing = 0;
    for (size_t i = 0; i < p->n; i++)
        if (lstat(p->images[i], &st) == 0) {
            if (existing < EXISTING_SHOWN)
                cmd_report(inv, LABEL,
                           "%s: exists; nothing is ever overwritten: remove it or give another "
                           "OUT_DIR",
                           p->images[i]);
            existing++;
        }
    if (existing > EXISTING_SHOWN)
        cmd_report(inv, LABEL, "... and %zu more images that exist in %s",
                   existing - EXISTING_SHOWN, p->images_dir);
    return existing ? TERN_EXIT_USAGE : code;
}

/* The flags of every file written: no fsync, as a data set of thousands of
 * pictures would wait long for the disk; a reader never sees a part of a
 * file, and a crash of the machine means running the command again. */
#define WRITE_FLAGS TERN_ATOMIC_FILE_NO_SYNC

/* Write data to a new temporary file beside `path`; its name into *tmp
 * (malloc'd). 0, or -1 with errno set (and no file left). */
static int write_tmp(const char *path, const void *data, size_t len, char **tmp)
{
    tern_atomic_file a;
    if (tern_atomic_file_open_unique(&a, path, WRITE_FLAGS, NULL, 0) != 0 ||
        tern_atomic_file_write(&a, data, len, NULL, 0) != 0 ||
        tern_atomic_file_finish(&a, NULL, 0) != 0)
        return -1;
    if (!(*tmp = strdup(a.tmp))) {
        unlink(a.tmp);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* Generate, encode and write every image, and the tasks file as it goes,
 * to temporary files. TERN_EXIT_OK, or the exit code after the message. */
/* The task types --types keeps, a bit each in the order tern_shapes_next
 * writes them. */
static const char *const type_names[TERN_SHAPES_TASKS] = {"count_regions", "color_at",
                                                          "grounding", "counting"};

/* The mask of `types` (NULL or "": all); -1 for a name that is no type. */
static int parse_types(const char *types, char *bad, size_t badn)
{
    if (!types || !*types)
        return (1 << TERN_SHAPES_TASKS) - 1;
    int mask = 0;
    for (const char *at = types; *at;) {
        size_t len = strcspn(at, ",");
        int k = 0;
        while (k < TERN_SHAPES_TASKS &&
               (strlen(type_names[k]) != len || strncmp(type_names[k], at, len) != 0))
            k++;
        if (k == TERN_SHAPES_TASKS) {
            snprintf(bad, badn, "%.*s", (int)(len < 60 ? len : 60), at);
            return -1;
        }
        mask |= 1 << k;
        at += len + (at[len] == ',');
    }
    return mask;
}

static int write_all(const tern_invocation *inv, const tern_shapes_args *a, int types, plan *p)
{
    FILE *f = NULL;
    if (tern_atomic_file_open_unique(&p->tasks_file, p->tasks, WRITE_FLAGS, NULL, 0) != 0 ||
        !(f = tern_atomic_file_stream(&p->tasks_file, NULL, 0))) {
        int e = errno;
        tern_atomic_file_abort(&p->tasks_file);
        cmd_report(inv, LABEL, "%s: cannot write: %s", p->tasks, strerror(e));
        return TERN_EXIT_FAILURE;
    }
    tern_shapes_gen g;
    tern_shapes_begin(&g, a->seed, a->size_px);
    int code = TERN_EXIT_OK;
    for (size_t i = 0; i < p->n && code == TERN_EXIT_OK; i++) {
        tern_scene sc;
        tern_shape_task tasks[TERN_SHAPES_TASKS];
        uint8_t *png = NULL;
        size_t len = 0;
        if (tern_shapes_next(&g, &sc, tasks) != TERN_OK ||
            tern_png_encode_rgb(sc.rgb, (uint32_t)sc.size, (uint32_t)sc.size, &png, &len) !=
                TERN_OK) {
            tern_scene_free(&sc);
            cmd_report(inv, LABEL, "out of memory drawing picture %zu", i + 1);
            code = TERN_EXIT_FAILURE;
            break;
        }
        tern_scene_free(&sc);
        if (write_tmp(p->images[i], png, len, &p->images_tmp[i]) != 0) {
            cmd_report(inv, LABEL, "%s: cannot write: %s", p->images[i], strerror(errno));
            code = TERN_EXIT_FAILURE;
        }
        free(png);
        for (int k = 0; k < TERN_SHAPES_TASKS && code == TERN_EXIT_OK; k++) {
            const tern_shape_task *tk = &tasks[k];
            if (!(types & (1 << k)))
                continue;
            fprintf(f, "{\"id\":\"shapes-%0*zu-%s\",\"domain\":\"vision\",\"prompt\":\"%s\","
                       "\"image\":\"" IMAGES_DIR "/shape-%0*zu.png\",\"type\":\"%s\"%s%s,"
                       "\"answer\":\"%s\"}\n",
                    p->width, i + 1, tk->type, tk->prompt, p->width, i + 1, tk->type,
                    tk->fields[0] ? "," : "", tk->fields, tk->answer);
        }
    }
    if (code == TERN_EXIT_OK && tern_atomic_file_finish(&p->tasks_file, NULL, 0) != 0) {
        cmd_report(inv, LABEL, "%s: cannot write: %s", p->tasks, strerror(errno));
        code = TERN_EXIT_FAILURE;
    }
    return code;
}

/* Rename the images, then the tasks file, into place. */
static int publish(const tern_invocation *inv, plan *p)
{
    for (; p->renamed < p->n; p->renamed++)
        if (rename(p->images_tmp[p->renamed], p->images[p->renamed]) != 0) {
            cmd_report(inv, LABEL, "%s: cannot write: %s", p->images[p->renamed], strerror(errno));
            return TERN_EXIT_FAILURE;
        }
    if (tern_atomic_file_commit(&p->tasks_file, NULL, 0) != 0) {
        cmd_report(inv, LABEL, "%s: cannot write: %s", p->tasks, strerror(errno));
        return TERN_EXIT_FAILURE;
    }
    return TERN_EXIT_OK;
}

/* Remove every file of this call: temporary ones, and those renamed into
 * place (they did not exist before: check_targets saw to it). */
static void clean_up(plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        if (i < p->renamed)
            unlink(p->images[i]);
        else if (p->images_tmp[i])
            unlink(p->images_tmp[i]);
    }
    tern_atomic_file_abort(&p->tasks_file);
}

int tern_cmd_data_shapes(const tern_invocation *inv, const tern_shapes_args *a)
{
    if (cmd_structs_too_old(inv, LABEL, a ? a->size : 0, sizeof(tern_shapes_args)))
        return TERN_EXIT_USAGE;
    if (!a->out_dir || !*a->out_dir) {
        cmd_report(inv, LABEL,
                   "needs OUT_DIR, the directory to write " TASKS_FILE " and " IMAGES_DIR "/ to");
        return TERN_EXIT_USAGE;
    }
    if (a->n_images < 1 || a->n_images > N_MAX) {
        cmd_report(inv, LABEL, "--n is %llu; give the number of pictures, from 1 to %llu",
                   a->n_images, N_MAX);
        return TERN_EXIT_USAGE;
    }
    if (a->size_px < TERN_SHAPES_MIN_SIZE || a->size_px > TERN_SHAPES_MAX_SIZE) {
        cmd_report(inv, LABEL,
                   "--size is %d; give the pictures' width and height in pixels, from %d to %d",
                   a->size_px, TERN_SHAPES_MIN_SIZE, TERN_SHAPES_MAX_SIZE);
        return TERN_EXIT_USAGE;
    }
    const char *types = TERN_HAS(a, types) ? a->types : NULL;
    char bad[64];
    int mask = parse_types(types, bad, sizeof bad);
    if (mask <= 0) {
        cmd_report(inv, LABEL, "--types: \"%s\" is not a task type; give some of "
                   "count_regions, color_at, grounding, counting, comma-separated",
                   mask < 0 ? bad : "");
        return TERN_EXIT_USAGE;
    }
    plan p;
    if (plan_make(&p, a->out_dir, (size_t)a->n_images) != 0) {
        plan_free(&p);
        cmd_report(inv, LABEL, "out of memory");
        return TERN_EXIT_FAILURE;
    }
    int code = check_targets(inv, a->out_dir, &p);
    tern_made_dirs made = {0};
    if (code == TERN_EXIT_OK && tern_make_dirs(p.images_dir, &made, NULL, 0) != 0) {
        int e = errno;
        cmd_report(inv, LABEL, "%s: cannot create the directory: %s", p.images_dir, strerror(e));
        code = e == ENOTDIR || e == EEXIST ? TERN_EXIT_USAGE : TERN_EXIT_FAILURE;
    }
    if (code == TERN_EXIT_OK)
        code = write_all(inv, a, mask, &p);
    if (code == TERN_EXIT_OK)
        code = publish(inv, &p);
    if (code != TERN_EXIT_OK && p.images_tmp)
        clean_up(&p);
    if (code != TERN_EXIT_OK)
        tern_made_dirs_remove(&made);
    tern_made_dirs_free(&made);
    if (code == TERN_EXIT_OK) {
        FILE *out = cmd_out(inv);
        int kinds = 0;
        char list[80] = "";
        for (int k = 0; k < TERN_SHAPES_TASKS; k++)
            if (mask & (1 << k)) {
                kinds++;
                size_t at = strlen(list);
                snprintf(list + at, sizeof list - at, "%s%s", at ? ", " : "", type_names[k]);
            }
        fprintf(out, "%s: %zu tasks (%zu %s %s)\n", p.tasks, p.n * (size_t)kinds, p.n,
                kinds == 1 ? "of" : "each of", list);
        fprintf(out, "%s: %zu PNG picture%s of %dx%d pixels\n", p.images_dir, p.n,
                p.n == 1 ? "" : "s", a->size_px, a->size_px);
        fprintf(out, "seed %llu, domain vision: judge them with the vision reward "
                "(docs/rewards.md)\n", a->seed);
    }
    plan_free(&p);
    return code;
}
