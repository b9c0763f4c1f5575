/* op_watch.c: the plugin ops in flight, and the fatal-signal report that
 * names the one a thread crashed in (see op_watch.h). */
#include "base/op_watch.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static tern_op_mark *table; /* every op in flight, all threads */
/* the innermost op of this thread, read by the signal handler: initial-exec
 * so that reading it there never allocates (libtern is loaded with tern) */
static _Thread_local tern_op_mark *current __attribute__((tls_model("initial-exec")));

void tern_op_enter(tern_op_mark *m)
{
    m->start_ns = tern_mono_ns();
    m->thread = pthread_self();
    m->warned = 0;
    m->outer = current;
    pthread_mutex_lock(&table_lock);
    m->prev = NULL;
    m->next = table;
    if (table)
        table->prev = m;
    table = m;
    pthread_mutex_unlock(&table_lock);
    atomic_signal_fence(memory_order_seq_cst); /* whole before the handler can see it */
    current = m;
}

void tern_op_leave(tern_op_mark *m)
{
    current = m->outer;
    atomic_signal_fence(memory_order_seq_cst);
    pthread_mutex_lock(&table_lock);
    if (m->prev)
        m->prev->next = m->next;
    else
        table = m->next;
    if (m->next)
        m->next->prev = m->prev;
    pthread_mutex_unlock(&table_lock);
}

void tern_op_visit(tern_op_visit_fn fn, void *arg)
{
    pthread_mutex_lock(&table_lock);
    uint64_t now = tern_mono_ns();
    for (tern_op_mark *m = table; m; m = m->next)
        fn(m, now, arg);
    pthread_mutex_unlock(&table_lock);
}

void tern_op_describe(const tern_op_mark *m, char *buf, size_t n)
{
    int w = snprintf(buf, n, "plugin '%s' (%s) in its %s() op, for %s", m->plugin, m->path,
                     m->op, m->who);
    if (w < 0 || (size_t)w >= n)
        return;
    if (m->items > 1 && m->task)
        snprintf(buf + w, n - (size_t)w, ", on a batch of %zu responses, the first to task '%s'",
                 m->items, m->task);
    else if (m->task)
        snprintf(buf + w, n - (size_t)w, ", on the response to task '%s'", m->task);
}

/* ---- the fatal-signal report ---------------------------------------------------- */

/* Only async-signal-safe calls below: write(2), clock_gettime, sigaction,
 * raise; the text is put together by hand, not with stdio. */
typedef struct ss_buf {
    char b[2048];
    size_t n;
} ss_buf;

static void ss_put(ss_buf *s, const char *t)
{
    for (; t && *t && s->n < sizeof s->b - 1; t++)
        s->b[s->n++] = *t;
}

static void ss_num(ss_buf *s, unsigned long long v, int width)
{
    char d[24];
    int k = 0;
    do {
        d[k++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && k < (int)sizeof d);
    while (k < width && k < (int)sizeof d)
        d[k++] = '0';
    while (k > 0 && s->n < sizeof s->b - 1)
        s->b[s->n++] = d[--k];
}

/* log.txt's stamp, "2026-11-26T14:03:59.123Z", without gmtime (not
 * async-signal-safe): days to a civil date, the algorithm of H. Hinnant's
 * "chrono-compatible low-level date algorithms". */
static void ss_stamp(ss_buf *s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long secs = ts.tv_sec, z = secs / 86400 + 719468;
    long long era = z / 146097, doe = z - era * 146097;
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
    long long day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
    long long year = yoe + era * 400 + (month <= 2);
    long long sod = secs % 86400;
    ss_num(s, (unsigned long long)year, 4), ss_put(s, "-");
    ss_num(s, (unsigned long long)month, 2), ss_put(s, "-");
    ss_num(s, (unsigned long long)day, 2), ss_put(s, "T");
    ss_num(s, (unsigned long long)(sod / 3600), 2), ss_put(s, ":");
    ss_num(s, (unsigned long long)(sod / 60 % 60), 2), ss_put(s, ":");
    ss_num(s, (unsigned long long)(sod % 60), 2), ss_put(s, ".");
    ss_num(s, (unsigned long long)(ts.tv_nsec / 1000000), 3), ss_put(s, "Z ");
}

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction replaced[N_FATAL];
static atomic_int installed, reported;

static const char *fatal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV (a bad memory access)";
    case SIGBUS: return "SIGBUS (a bad memory access)";
    case SIGFPE: return "SIGFPE (an arithmetic fault, such as a division by zero)";
    case SIGILL: return "SIGILL (an illegal instruction)";
    case SIGABRT: return "SIGABRT (abort(), a failed assert)";
    default: return "a fatal signal";
    }
}

/* "error [WHO] plugin 'P' (FILE) crashed with SIG in its OP() op, ...; FIX\n" */
static void write_report(const tern_op_mark *m, int sig)
{
    ss_buf s = {.n = 0};
    ss_put(&s, "[");
    ss_put(&s, m->who);
    ss_put(&s, "] plugin '");
    ss_put(&s, m->plugin);
    ss_put(&s, "' (");
    ss_put(&s, m->path);
    ss_put(&s, ") crashed with ");
    ss_put(&s, fatal_name(sig));
    ss_put(&s, " in its ");
    ss_put(&s, m->op);
    ss_put(&s, "() op");
    if (m->task) {
        if (m->items > 1) {
            ss_put(&s, ", on a batch of ");
            ss_num(&s, m->items, 1);
            ss_put(&s, " responses, the first to task '");
        } else {
            ss_put(&s, ", on the response to task '");
        }
        ss_put(&s, m->task);
        ss_put(&s, "'");
    }
    ss_put(&s, ", and took tern with it");
    if (m->fix) {
        ss_put(&s, "; ");
        ss_put(&s, m->fix);
    }
    ss_put(&s, "\n");
    static const char tag[] = "tern: error: ";
    ssize_t ignored = write(STDERR_FILENO, tag, sizeof tag - 1);
    ignored = write(STDERR_FILENO, s.b, s.n);
    int fd = tern_log_fd();
    if (fd >= 0) {
        ss_buf line = {.n = 0};
        ss_stamp(&line);
        ss_put(&line, "error ");
        ignored = write(fd, line.b, line.n);
        ignored = write(fd, s.b, s.n);
    }
    (void)ignored;
}

static void on_fatal_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    const tern_op_mark *m = current;
    /* one report: a second thread crashing meanwhile, or the re-raise below */
    if (m && atomic_exchange(&reported, 1) == 0)
        write_report(m, sig);
    /* hand the signal on: the replaced action (default: die with a core, the
     * exit status 128 + sig; a sanitizer: its report) runs when the faulting
     * instruction runs again on return, or at once for a sent signal */
    for (size_t i = 0; i < N_FATAL; i++)
        if (fatal_signals[i] == sig)
            sigaction(sig, &replaced[i], NULL);
    if (info->si_code <= 0) /* sent (kill, raise, abort): not raised again on return */
        raise(sig);
}

void tern_crash_report_install(void)
{
    if (atomic_exchange(&installed, 1))
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_FATAL; i++)
        sigaction(fatal_signals[i], &sa, &replaced[i]);
}
