/* cmd_shapes.c: `tern data shapes` (tern/libtern.h): write synthetic
 * pictures (data/shapes.h) as PNG files (data/png_write.h) and the vision
 * tasks about them into a directory, never over a file that is there. Every
 * file is written to a temporary name and renamed into place once all of
 * them are written; on failure whatever this call created is removed. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/png_write.h"
#include "data/shapes.h"
#include "made_dirs.h"
#include "path_join.h"
#include "tern/host.h"
#include "tern/libtern.h"

#define LABEL "tern data shapes"
#define TASKS_FILE "shapes.jsonl"
#define IMAGES_DIR "images"
#define N_MAX 100000ull
/* Existing files named one by one before "and N more". */
#define EXISTING_SHOWN 3

static FILE *out_of(const tern_invocation *inv) { return inv->out ? inv->out : stdout; }
static FILE *err_of(const tern_invocation *inv) { return inv->err ? inv->err : stderr; }

static void report(const tern_invocation *inv, const char *fmt, ...) TERN_PRINTF(2, 3);
static void report(const tern_invocation *inv, const char *fmt, ...)
{
    FILE *err = err_of(inv);
    va_list ap;
    va_start(ap, fmt);
    fprintf(err, LABEL ": ");
    vfprintf(err, fmt, ap);
    fprintf(err, "\n");
    va_end(ap);
}

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
    char *tasks, *tasks_tmp;
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
    free(p->tasks_tmp);
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
                report(inv, "%s: exists and is not a directory; give a directory for the tasks "
                       "and images (it is created if missing)", dirs[i]);
                return TERN_EXIT_USAGE;
            }
        } else if (errno == ENOTDIR) {
            report(inv, "%s: cannot be a directory: %s; give another OUT_DIR", dirs[i],
                   strerror(errno));
            return TERN_EXIT_USAGE;
        } else if (errno != ENOENT) {
            report(inv, "%s: cannot use it: %s", dirs[i], strerror(errno));
            return TERN_EXIT_FAILURE;
        } else {
            break; /* absent: nothing inside it exists */
        }
    }
    int code = TERN_EXIT_OK;
    if (lstat(p->tasks, &st) == 0) {
        report(inv, "%s: exists; nothing is ever overwritten: remove it or give another OUT_DIR",
               p->tasks);
        code = TERN_EXIT_USAGE;
    }
    size_t existing = 0;
    for (size_t i = 0; i < p->n; i++)
        if (lstat(p->images[i], &st) == 0) {
            if (existing < EXISTING_SHOWN)
                report(inv, "%s: exists; nothing is ever overwritten: remove it or give another "
                       "OUT_DIR", p->images[i]);
            existing++;
        }
    if (existing > EXISTING_SHOWN)
        report(inv, "... and %zu more images that exist in %s", existing - EXISTING_SHOWN,
               p->images_dir);
    return existing ? TERN_EXIT_USAGE : code;
}

/* Create a new temporary file beside `path`, its name into *tmp. The
 * descriptor, or -1 with errno set. */
static int open_tmp(const char *path, char **tmp)
{
    size_t cap = strlen(path) + 48;
    *tmp = malloc(cap);
    if (!*tmp) {
        errno = ENOMEM;
        return -1;
    }
    int fd = -1;
    for (unsigned attempt = 0; fd < 0 && attempt < 100; attempt++) {
        snprintf(*tmp, cap, "%s.tmp-%ld-%u", path, (long)getpid(), attempt);
        fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        int e = errno;
        free(*tmp);
        *tmp = NULL;
        errno = e;
    }
    return fd;
}

/* Forget a temporary file that failed: remove it. */
static void drop_tmp(char **tmp)
{
    int e = errno;
    unlink(*tmp);
    free(*tmp);
    *tmp = NULL;
    errno = e;
}

/* Write data to a new temporary file beside `path`; its name into *tmp.
 * 0, or -1 with errno set (and no file left). */
static int write_tmp(const char *path, const void *data, size_t len, char **tmp)
{
    int fd = open_tmp(path, tmp);
    if (fd < 0)
        return -1;
    const uint8_t *p = data;
    size_t done = 0;
    while (done < len) {
        ssize_t k = write(fd, p + done, len - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            int e = errno;
            close(fd);
            errno = e;
            drop_tmp(tmp);
            return -1;
        }
        done += (size_t)k;
    }
    if (close(fd) != 0) {
        drop_tmp(tmp);
        return -1;
    }
    return 0;
}

/* Generate, encode and write every image, and the tasks file as it goes,
 * to temporary files. TERN_EXIT_OK, or the exit code after the message. */
static int write_all(const tern_invocation *inv, const tern_shapes_args *a, plan *p)
{
    int fd = open_tmp(p->tasks, &p->tasks_tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            drop_tmp(&p->tasks_tmp);
        }
        report(inv, "%s: cannot write: %s", p->tasks, strerror(e));
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
            report(inv, "out of memory drawing picture %zu", i + 1);
            code = TERN_EXIT_FAILURE;
            break;
        }
        tern_scene_free(&sc);
        if (write_tmp(p->images[i], png, len, &p->images_tmp[i]) != 0) {
            report(inv, "%s: cannot write: %s", p->images[i], strerror(errno));
            code = TERN_EXIT_FAILURE;
        }
        free(png);
        for (int k = 0; k < TERN_SHAPES_TASKS && code == TERN_EXIT_OK; k++) {
            const tern_shape_task *tk = &tasks[k];
            fprintf(f, "{\"id\":\"shapes-%0*zu-%s\",\"domain\":\"vision\",\"prompt\":\"%s\","
                       "\"image\":\"" IMAGES_DIR "/shape-%0*zu.png\",\"type\":\"%s\"%s%s,"
                       "\"answer\":\"%s\"}\n",
                    p->width, i + 1, tk->type, tk->prompt, p->width, i + 1, tk->type,
                    tk->fields[0] ? "," : "", tk->fields, tk->answer);
        }
    }
    int e = errno, bad = fflush(f) != 0 || ferror(f);
    if (bad)
        e = errno;
    if (fclose(f) != 0 && !bad)
        bad = 1, e = errno;
    if (bad && code == TERN_EXIT_OK) {
        report(inv, "%s: cannot write: %s", p->tasks, strerror(e ? e : EIO));
        code = TERN_EXIT_FAILURE;
    }
    return code;
}

/* Rename the images, then the tasks file, into place. */
static int publish(const tern_invocation *inv, plan *p)
{
    for (; p->renamed < p->n; p->renamed++)
        if (rename(p->images_tmp[p->renamed], p->images[p->renamed]) != 0) {
            report(inv, "%s: cannot write: %s", p->images[p->renamed], strerror(errno));
            return TERN_EXIT_FAILURE;
        }
    if (rename(p->tasks_tmp, p->tasks) != 0) {
        report(inv, "%s: cannot write: %s", p->tasks, strerror(errno));
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
    if (p->tasks_tmp)
        unlink(p->tasks_tmp);
}

int tern_cmd_data_shapes(const tern_invocation *inv, const tern_shapes_args *a)
{
    if (!inv || inv->size < sizeof(tern_invocation) || !a || a->size < sizeof(tern_shapes_args)) {
        fprintf(inv && inv->size >= sizeof(tern_invocation) ? err_of(inv) : stderr,
                LABEL ": the caller's argument structs are too old for this libtern\n");
        return TERN_EXIT_USAGE;
    }
    if (!a->out_dir || !*a->out_dir) {
        report(inv, "needs OUT_DIR, the directory to write " TASKS_FILE " and " IMAGES_DIR
               "/ to");
        return TERN_EXIT_USAGE;
    }
    if (a->n_images < 1 || a->n_images > N_MAX) {
        report(inv, "--n is %llu; give the number of pictures, from 1 to %llu", a->n_images,
               N_MAX);
        return TERN_EXIT_USAGE;
    }
    if (a->size_px < TERN_SHAPES_MIN_SIZE || a->size_px > TERN_SHAPES_MAX_SIZE) {
        report(inv, "--size is %d; give the pictures' width and height in pixels, from %d to %d",
               a->size_px, TERN_SHAPES_MIN_SIZE, TERN_SHAPES_MAX_SIZE);
        return TERN_EXIT_USAGE;
    }
    plan p;
    if (plan_make(&p, a->out_dir, (size_t)a->n_images) != 0) {
        plan_free(&p);
        report(inv, "out of memory");
        return TERN_EXIT_FAILURE;
    }
    int code = check_targets(inv, a->out_dir, &p);
    tern_made_dirs made = {0};
    if (code == TERN_EXIT_OK && tern_make_dirs(p.images_dir, &made) != 0) {
        int e = errno;
        report(inv, "%s: cannot create the directory: %s", p.images_dir, strerror(e));
        code = e == ENOTDIR || e == EEXIST ? TERN_EXIT_USAGE : TERN_EXIT_FAILURE;
    }
    if (code == TERN_EXIT_OK)
        code = write_all(inv, a, &p);
    if (code == TERN_EXIT_OK)
        code = publish(inv, &p);
    if (code != TERN_EXIT_OK && p.images_tmp)
        clean_up(&p);
    if (code != TERN_EXIT_OK)
        tern_made_dirs_remove(&made);
    tern_made_dirs_free(&made);
    if (code == TERN_EXIT_OK) {
        FILE *out = out_of(inv);
        fprintf(out, "%s: %zu tasks (%zu each of count_regions, color_at, grounding, counting)\n",
                p.tasks, p.n * TERN_SHAPES_TASKS, p.n);
        fprintf(out, "%s: %zu PNG picture%s of %dx%d pixels\n", p.images_dir, p.n,
                p.n == 1 ? "" : "s", a->size_px, a->size_px);
        fprintf(out, "seed %llu, domain vision: judge them with the vision reward "
                "(docs/rewards.md)\n", a->seed);
    }
    plan_free(&p);
    return code;
}
