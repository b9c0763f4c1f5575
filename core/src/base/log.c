/* log.c: leveled logging to stderr and log.txt (see log.h). */
#include "base/append_file.h"
#include "base/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include "base/errmsg.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static tern_log_level log_level = TERN_LOG_INFO;
static FILE *log_file;
static atomic_int log_fd = -1; /* log_file's, read by the crash report without the lock */
static FILE *log_stream;
static int stream_gone; /* its reader went away (EPIPE) or its terminal hung up (EIO) */
static char progress_line[512]; /* the status line shown on a terminal */
static tern_log_forward_fn forward_fn;
static void *forward_arg;
static int progress_shown;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void tern_log_set_level(tern_log_level level)
{
    pthread_mutex_lock(&log_lock);
    log_level = level;
    pthread_mutex_unlock(&log_lock);
}

int tern_log_level_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, level_names[i]) == 0)
            return i;
    return -1;
}

int tern_log_open_file(const char *path)
{
    FILE *f = tern_append_open(path, "the log file");
    if (!f)
        return TERN_EIO;
    pthread_mutex_lock(&log_lock);
    atomic_store(&log_fd, -1);
    if (log_file)
        fclose(log_file);
    log_file = f;
    atomic_store(&log_fd, fileno(f));
    pthread_mutex_unlock(&log_lock);
    return TERN_OK;
}

int tern_log_fd(void)
{
    return atomic_load(&log_fd);
}

void tern_log_close_file(void)
{
    pthread_mutex_lock(&log_lock);
    atomic_store(&log_fd, -1);
    if (log_file)
        fclose(log_file);
    log_file = NULL;
    pthread_mutex_unlock(&log_lock);
}

void tern_log_set_stream(FILE *stream)
{
    pthread_mutex_lock(&log_lock);
    log_stream = stream;
    stream_gone = 0;
    pthread_mutex_unlock(&log_lock);
}

/* Flush the stream after a write; the caller holds log_lock. A stream whose
 * reader is gone (`tern run ... 2>&1 | head`, with SIGPIPE ignored) or whose
 * terminal hung up is written no more, and log.txt goes on alone. */
static void stream_flush(FILE *out)
{
    if (fflush(out) == 0 && !ferror(out))
        return;
    if (errno == EPIPE || errno == EIO)
        stream_gone = 1;
    clearerr(out);
}

/* One line to log.txt, if open; the caller holds log_lock. */
static void file_line(tern_log_level level, const char *who, const char *line)
{
    if (!log_file)
        return;
    struct timespec ts;
    struct tm tm;
    char stamp[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(log_file, "%s.%03ldZ %-5s [%s] %s\n", stamp, ts.tv_nsec / 1000000L,
            level_names[level], who ? who : "core", line);
    fflush(log_file);
}

void tern_log_set_forward(tern_log_forward_fn fn, void *arg)
{
    pthread_mutex_lock(&log_lock);
    forward_fn = fn;
    forward_arg = arg;
    pthread_mutex_unlock(&log_lock);
}

void tern_log_file_only(tern_log_level level, const char *who, const char *line)
{
    if ((int)level < 0 || level > TERN_LOG_DEBUG)
        level = TERN_LOG_ERROR;
    pthread_mutex_lock(&log_lock);
    if (level <= log_level)
        file_line(level, who, line);
    pthread_mutex_unlock(&log_lock);
}

void tern_vlogf(tern_log_level level, const char *who, const char *fmt, va_list ap)
{
    if ((int)level < 0 || level > TERN_LOG_DEBUG)
        level = TERN_LOG_ERROR;
    char line[4096];
    vsnprintf(line, sizeof line, fmt, ap);
    /* One line per call: a plugin's embedded newlines would break log.txt's format. */
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';

    pthread_mutex_lock(&log_lock);
    if (level <= log_level) {
        FILE *out = log_stream ? log_stream : stderr;
        if (!stream_gone) {
            if (progress_shown)
                fputs("\r\033[K", out); /* the log line takes the progress line's place */
            fprintf(out, "tern: %s: [%s] %s\n", level_names[level], who ? who : "core", line);
            if (progress_shown)
                fputs(progress_line, out);
            stream_flush(out);
        }
        file_line(level, who, line);
    }
    tern_log_forward_fn fn = level <= log_level ? forward_fn : NULL;
    void *arg = forward_arg;
    pthread_mutex_unlock(&log_lock);
    if (fn)
        fn(arg, level, who ? who : "core", line);
}

void tern_log_progress(const char *text)
{
    pthread_mutex_lock(&log_lock);
    FILE *out = log_stream ? log_stream : stderr;
    int tty = isatty(fileno(out));
    if (tty) {
        snprintf(progress_line, sizeof progress_line, "%s", text);
        if (!stream_gone) {
            fprintf(out, "\r\033[K%s", progress_line);
            stream_flush(out);
        }
        progress_shown = 1;
        if (TERN_LOG_INFO <= log_level)
            file_line(TERN_LOG_INFO, "progress", text); /* log.txt still gets every step */
    }
    pthread_mutex_unlock(&log_lock);
    if (!tty)
        tern_logf(TERN_LOG_INFO, "progress", "%s", text);
}

void tern_log_progress_end(void)
{
    pthread_mutex_lock(&log_lock);
    if (progress_shown) {
        FILE *out = log_stream ? log_stream : stderr;
        if (!stream_gone) {
            fputs("\n", out);
            stream_flush(out);
        }
        progress_shown = 0;
    }
    pthread_mutex_unlock(&log_lock);
}

void tern_logf(tern_log_level level, const char *who, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tern_vlogf(level, who, fmt, ap);
    va_end(ap);
}
