/* watchdog.c: naming the plugin ops that take too long (see watchdog.h). */
#include "base/watchdog.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/errmsg.h"
#include "base/log.h"
#include "base/op_watch.h"

enum { TICK_MS = 250, STOP_GRACE_NS = 1000000000 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_t thread;
static int running, quitting;
static void (*stuck_stop)(void *);
static void *stuck_arg;
static pthread_t owner; /* the thread that started it: the run's master */
static atomic_int first_sig, second_sig;

void tern_watchdog_signal(int sig, int nth)
{
    atomic_store(nth <= 1 ? &first_sig : &second_sig, sig);
}

static const char *sig_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP"
         : sig == SIGUSR1 ? "SIGUSR1" : "a stop signal";
}

/* What one tick found: at most a few ops, copied out of the table. */
enum { MAX_SEEN = 8 };
typedef struct seen {
    int n;
    char who[MAX_SEEN][48];
    char text[MAX_SEEN][1024];
    double secs[MAX_SEEN];
    const char *fix[MAX_SEEN];
    int want_stuck; /* collect those in flight over a second (a stop waits for them) */
    int owner_stuck; /* the owner has been in an op for over a second */
} seen;

static void visit(tern_op_mark *m, uint64_t now, void *arg)
{
    seen *s = arg;
    uint64_t age = now - m->start_ns;
    if (pthread_equal(m->thread, owner) && age > STOP_GRACE_NS)
        s->owner_stuck = 1;
    int over = m->limit_ns && age > m->limit_ns && !m->warned;
    int stuck = s->want_stuck && age > STOP_GRACE_NS;
    if ((!over && !stuck) || s->n == MAX_SEEN)
        return;
    if (over)
        m->warned = 1;
    snprintf(s->who[s->n], sizeof s->who[s->n], "%s", m->who);
    tern_op_describe(m, s->text[s->n], sizeof s->text[s->n]);
    s->secs[s->n] = (double)age / 1e9;
    s->fix[s->n] = m->fix;
    s->n++;
}

static void *watch(void *arg)
{
    (void)arg;
    int told_first = 0;
    uint64_t second_at = 0;
    pthread_mutex_lock(&lock);
    while (!quitting) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L)
            until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&wake, &lock, &until);
        if (quitting)
            break;
        pthread_mutex_unlock(&lock);

        int sig = atomic_load(&first_sig);
        seen s = {.want_stuck = sig && !told_first};
        tern_op_visit(visit, &s);
        for (int i = 0; i < s.n; i++) {
            if (s.want_stuck)
                tern_logf(TERN_LOG_WARN, "run", "%s: the step in progress waits for %s, which "
                          "has been running for %.0f s; a second signal stops at once, without "
                          "it", sig_name(sig), s.text[i], s.secs[i]);
            else
                tern_logf(TERN_LOG_WARN, s.who[i], "%s has been running for %.0f s and may be "
                          "stuck (a call inside tern cannot be stopped)%s%s", s.text[i],
                          s.secs[i], s.fix[i] ? "; " : "", s.fix[i] ? s.fix[i] : "");
        }
        if (s.want_stuck && s.n)
            told_first = 1; /* else: said when an op has held up the stop for a second */
        if (atomic_load(&second_sig) && stuck_stop) {
            uint64_t now = tern_mono_ns();
            if (!second_at)
                second_at = now;
            else if (now - second_at > STOP_GRACE_NS && s.owner_stuck) {
                stuck_stop(stuck_arg); /* does not return when it stops the process */
                stuck_stop = NULL;
            }
        }
        pthread_mutex_lock(&lock);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

int tern_watchdog_start(void (*on_stuck_stop)(void *arg), void *arg)
{
    pthread_mutex_lock(&lock);
    if (running) {
        pthread_mutex_unlock(&lock);
        return tern_errorf(TERN_EINVAL, "the watchdog is running already");
    }
    quitting = 0;
    stuck_stop = on_stuck_stop;
    stuck_arg = arg;
    owner = pthread_self();
    atomic_store(&first_sig, 0);
    atomic_store(&second_sig, 0);
    int rc = pthread_create(&thread, NULL, watch, NULL);
    running = rc == 0;
    pthread_mutex_unlock(&lock);
    return rc == 0 ? TERN_OK
                   : tern_errorf(TERN_ERR, "cannot start the watchdog thread: %s", strerror(rc));
}

void tern_watchdog_stop(void)
{
    pthread_mutex_lock(&lock);
    if (!running) {
        pthread_mutex_unlock(&lock);
        return;
    }
    quitting = 1;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    pthread_join(thread, NULL);
    pthread_mutex_lock(&lock);
    running = 0;
    pthread_mutex_unlock(&lock);
}
