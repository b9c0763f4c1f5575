/*
 * sqlite.c: the `sqlite` buffer plugin: a durable first-in first-out queue of
 * records kept in one SQLite database file in WAL mode, with exactly-once
 * consumption (buffer ABI 1.6: commit and recover). Records survive a crash
 * of the process that put them and of the process that got them, and several
 * processes (or several instances in one process) may share the file: each
 * record is handed out once, to one of them, and leaves the file only when
 * the consumer commits it. See docs/buffers.md.
 *
 * Settings:
 *   path             the database file, relative to the working directory;
 *                    not empty. In `tern run` it defaults to buffer.sqlite
 *                    in the run directory (TERN_SETTING_IN_RUN_DIR), so
 *                    --resume finds it again; elsewhere it must be set.
 *                    Created if absent (SQLite's mode
 *                    0644 less the umask); its directory must exist. While
 *                    the file is open SQLite keeps PATH-wal and PATH-shm
 *                    beside it; the last connection to close checkpoints the
 *                    WAL into PATH and removes both.
 *   capacity         [0, 1e9], default 0 = unbounded; N > 0: put waits while
 *                    N or more records in the file wait to be handed out
 *                    (whoever put them). A record handed out leaves the
 *                    count at once, as in fifo, though it stays in the file
 *                    until committed: so a consumer that commits late (a
 *                    run commits at its checkpoints) never holds producers
 *                    back with records it already has.
 *   synchronous      "full" (default): a put (a get, a commit) is
 *                    acknowledged only once it is on disk (survives power
 *                    loss). "normal": WAL's NORMAL level: survives a crash of
 *                    the process, but the last acknowledged transactions may
 *                    be lost on power loss or an OS crash; much faster (no
 *                    fsync per put).
 *   busy_timeout_ms  [0, 86400000], default 5000: how long one SQLite call
 *                    waits for a lock held by another connection.
 *
 * The file (schema.c): PRAGMA application_id = 0x7465726e ("tern") and
 * PRAGMA user_version = 2 (the schema) mark it; a file with another
 * application_id, a newer user_version, or that is not an SQLite database is
 * refused without being changed. A schema-1 file (tern before ABI 1.6) is
 * migrated in place on open, in one transaction, and the migration logged
 * (schema.c). One table and two indexes:
 *
 *   records(seq INTEGER PRIMARY KEY AUTOINCREMENT, id INTEGER NOT NULL,
 *           version INTEGER, batch INTEGER, put_unix_ns INTEGER NOT NULL,
 *           data BLOB NOT NULL, taken INTEGER NOT NULL DEFAULT 0)
 *   records_id ON records(id), records_waiting ON records(taken, seq)
 *
 * holding the records not committed yet: seq is the order of the puts'
 * commits, never reused; id, version, batch are the tern_record_meta members
 * (version and batch NULL when the producer's meta.size did not include them;
 * get gives back meta.size covering the members that were given, the others
 * 0); put_unix_ns is the wall-clock time of the put (CLOCK_REALTIME), for
 * people inspecting the file; taken is 0 for a record waiting to be handed
 * out, 1 once get() handed it out. The file does not shrink as records are
 * committed: SQLite reuses the freed pages for later records. create() logs
 * (info) how many records a file it opens holds, and how many of them were
 * handed out and not committed.
 *
 * put: one transaction, BEGIN IMMEDIATE (the write lock) ... COMMIT. With a
 * capacity, the count of waiting records is checked inside that transaction, so two
 * processes cannot both take the last slot. put returns TERN_OK only after
 * COMMIT returned: an acknowledged record is in the file (on disk with
 * synchronous = "full"). Any failure leaves the file as it was.
 *
 * get: a read (no lock) looks whether any waiting record (taken = 0) is
 * there; if so, one transaction BEGIN IMMEDIATE; SELECT the oldest `want`
 * waiting records by seq (through records_waiting: taken rows are not read);
 * UPDATE them to taken = 1; COMMIT; only then are copies handed out. A taken
 * record is never handed out again, by this or any other instance or process
 * on the file, yet it stays in the file: each record goes to exactly one
 * getter, in put order (commit order across processes), and a consumer that
 * crashes after get() returned loses nothing (see recover). A failure before
 * COMMIT hands nothing out and leaves the records waiting. The copies are
 * malloc'd nodes owned by the buffer, kept on a handed-out list until
 * release() (or destroy()) frees them; release() does not touch the file.
 *
 * commit: one transaction BEGIN IMMEDIATE; DELETE FROM records WHERE id = ?
 * for each id (through records_id: O(log n) per id); COMMIT. The records go
 * whether taken or still waiting; ids the file does not hold are ignored, so
 * committing the same ids twice (a commit repeated after a crash) is
 * harmless. A failure rolls back: none of the ids is forgotten. Forgetting
 * a waiting record makes room, which wakes this instance's blocked puts
 * (others notice it by polling). n = 0
 * does nothing and does not touch the file.
 *
 * recover: one transaction BEGIN IMMEDIATE; UPDATE records SET taken = 0
 * WHERE taken = 1 (each record keeps its seq, so its original place in the
 * hand-out order); SELECT id of every record by seq, writing the first `cap`
 * into ids and the count into *n; COMMIT. A failure changes nothing. A second
 * call (with a larger array, when *n > cap) has nothing more to hand back and
 * lists the same ids, unless a get in between took records, which it would
 * hand back too. It makes every taken record waiting again whoever took it:
 * only a consumer that knows no other consumer works on the file may call it
 * (in `tern run`, a resumed run, which holds its run directory's lock).
 *
 * Waiting: a get with no waiting record, or a put on a full file, waits up to
 * its timeout_ms (< 0: no limit, 0: no wait). Puts, commits and recovers of
 * this instance wake its waiters at once (condition variables); records put,
 * or room made, by another instance or process are noticed by checking the
 * file again every POLL_MS (20 ms). Deadlines use CLOCK_MONOTONIC. Waiting for
 * another connection's lock is SQLite's busy handler (busy_timeout_ms per
 * call); when it gives up, BEGIN IMMEDIATE of a put or get is retried every
 * POLL_MS until the caller's timeout, after which the call returns
 * TERN_ETIMEDOUT naming the lock (commit and recover, which have no timeout,
 * return TERN_ETIMEDOUT once busy_timeout_ms has passed). So a call may
 * overrun a timeout shorter than busy_timeout_ms while another connection
 * holds the lock (normally a few milliseconds, a commit's time).
 *
 * close: later puts (and blocked ones) return TERN_ECLOSED; gets stop waiting
 * and hand out the waiting records the file holds, then return TERN_ECLOSED
 * with *got = 0 once none is left (taken records do not count). commit and
 * recover still work after close. close affects this instance only, not
 * other instances or processes on the file; it never changes the file.
 *
 * stats: held = records in the file, waiting and taken alike (a taken record
 * is held until committed; all producers), capacity = the setting (0:
 * unbounded), put and got = records this instance put and handed out,
 * dropped = skipped = 0. held and the capacity check (WHERE taken = 0) are SELECT count(*),
 * which SQLite answers from the smaller index (hundreds of entries per page,
 * about 0.1 ms for 100,000 records once cached) without reading the table:
 * commits delete records out of seq order, so no cheaper exact count exists
 * (the max(seq) - min(seq) + 1 of schema 1 no longer holds), and a put's own
 * commit costs far more.
 *
 * Threads and processes: each instance has its own SQLite connection (opened
 * in create, so a process that forks must create its instance after the fork).
 * One mutex serialises this instance's use of its connection and guards the
 * handed-out list and counters; it is released while waiting, so a waiting get
 * does not hold up a put. Other connections on the file are other processes as
 * far as locking goes: SQLite's file locks and the WAL index (PATH-shm) do the
 * rest.
 *
 * Errors: a file create() cannot use (missing directory, not writable, not an
 * SQLite database, damaged, another program's database, a newer schema, no
 * WAL possible) fails with TERN_ECONFIG and "FILE:LINE: <group>.path: ..."
 * naming the file; the file is left as it was. A file of ours must read
 * whole (schema.c, PRAGMA quick_check): one cut short is refused as damaged,
 * and one found damaged later (SQLITE_CORRUPT in a put, get, commit or
 * recover) fails with TERN_EIO and the same words (SQB_DAMAGED_FMT). Every
 * other SQLite failure returns a status with a one-line message naming the
 * file and SQLite's own message: TERN_EIO; TERN_ENOMEM; TERN_ETIMEDOUT for a
 * lock held too long; TERN_EINVAL for a record larger than SQLite's limit
 * (1,000,000,000 bytes by default). Nothing exits or aborts; bad arguments
 * are TERN_EINVAL as in fifo.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include <tern/buffer.h>
#include <tern/plugin.h>

#include "../common/buffer_common.h"
#include "sqlite_schema.h"

/* How often a waiting call looks at the file again for other processes' work. */
#define POLL_MS 20

/* A try_* result meaning "not now": the caller waits and tries again. */
#define TRY_LATER 1
typedef enum why_wait { WAIT_EMPTY, WAIT_FULL, WAIT_LOCK } why_wait;

static const tern_host *host;

/* ---- statements ---------------------------------------------------------- */

enum {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_INSERT,
    ST_COUNT,
    ST_COUNT_TAKEN,
    ST_COUNT_WAITING,
    ST_PROBE,
    ST_SELECT,
    ST_TAKE,
    ST_FORGET,
    ST_UNTAKE,
    ST_IDS,
    ST_N
};

static const char *const stmt_sql[ST_N] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_INSERT] = "INSERT INTO records(id, version, batch, put_unix_ns, data) "
                  "VALUES (?1, ?2, ?3, ?4, ?5)",
    /* every record, waiting or taken: commits delete out of seq order, so
     * only a count is exact; SQLite answers it from one of the indexes (a
     * covering scan of small entries), not from the table's pages */
    [ST_COUNT] = "SELECT count(*) FROM records",
    [ST_COUNT_TAKEN] = "SELECT count(*) FROM records WHERE taken = 1",
    [ST_COUNT_WAITING] = "SELECT count(*) FROM records WHERE taken = 0",
    /* through records_waiting: taken records are not read */
    [ST_PROBE] = "SELECT 1 FROM records WHERE taken = 0 LIMIT 1",
    /* columns: 0 seq, 1 id, 2 version, 3 batch, 4 data */
    [ST_SELECT] = "SELECT seq, id, version, batch, data FROM records WHERE taken = 0 "
                  "ORDER BY seq LIMIT ?1",
    /* the selected rows are the oldest waiting ones, and the write lock is
     * held: exactly the waiting rows up to the last one selected */
    [ST_TAKE] = "UPDATE records SET taken = 1 WHERE taken = 0 AND seq <= ?1",
    /* through records_id: O(log n) per id */
    [ST_FORGET] = "DELETE FROM records WHERE id = ?1",
    [ST_UNTAKE] = "UPDATE records SET taken = 0 WHERE taken = 1",
    [ST_IDS] = "SELECT id FROM records ORDER BY seq",
};

/* ---- state ---------------------------------------------------------------- */

/* A record handed out: a copy of its row (meta.size: the members the
 * producer gave). */
typedef buffer_node node;

typedef struct sqb {
    tern_ctx *ctx;
    const char *path; /* the setting's string: valid until destroy */
    uint64_t capacity; /* 0: unbounded */
    int busy_timeout_ms;

    pthread_mutex_t lock;     /* the connection, `out`, the counters, `closed` */
    pthread_cond_t not_empty; /* this instance put a record, or closed */
    pthread_cond_t not_full;  /* this instance handed records out, or closed */
    sqlite3 *db;
    sqlite3_stmt *st[ST_N];
    qlink out; /* sentinel of the handed-out list */
    int closed;

    uint64_t n_put, n_got;
} sqb;

/* ---- waiting ------------------------------------------------------------ */

static int ts_before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Wait (lock held) on `cv` until woken, POLL_MS from now (to look at the file
 * again for other processes' work) or the caller's deadline, whichever comes
 * first. Returns ETIMEDOUT once the deadline has passed (at once for
 * timeout_ms == 0), else 0: the caller tries again. */
static int wait_poll(sqb *s, pthread_cond_t *cv, int64_t timeout_ms, const struct timespec *dl)
{
    if (timeout_ms == 0)
        return ETIMEDOUT;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (timeout_ms > 0 && !ts_before(&now, dl))
        return ETIMEDOUT;
    struct timespec until = buffer_ts_after(now, POLL_MS);
    int last = 0;
    if (timeout_ms > 0 && !ts_before(&until, dl)) {
        until = *dl;
        last = 1;
    }
    int rc = pthread_cond_timedwait(cv, &s->lock, &until);
    return rc == ETIMEDOUT && last ? ETIMEDOUT : 0;
}

/* ---- SQLite helpers (lock held) ------------------------------------------- */

static int is_busy(int rc) { return (rc & 0xff) == SQLITE_BUSY; }

/* The message for a failed SQLite call (call it before any other call on the
 * connection, which would replace sqlite3_errmsg); returns the status. */
static int db_fail(sqb *s, int rc, const char *fmt, ...) TERN_PRINTF(3, 4);
static int db_fail(sqb *s, int rc, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (is_busy(rc))
        return host->fail(s->ctx, TERN_ETIMEDOUT,
                          "sqlite: '%s' stayed locked by another connection for longer than "
                          "busy_timeout_ms = %d while %s (%s); another process holds a long "
                          "transaction on the file: raise busy_timeout_ms or find it",
                          s->path, s->busy_timeout_ms, what, sqlite3_errmsg(s->db));
    if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB) {
        /* damaged since it was opened (or in pages the open did not read) */
        char why[512];
        snprintf(why, sizeof why, "%s failed: %s", what, sqlite3_errmsg(s->db));
        return host->fail(s->ctx, TERN_EIO, "sqlite: " SQB_DAMAGED_FMT, s->path, why, s->path,
                          s->path);
    }
    return host->fail(s->ctx, sqb_status_of(rc), "sqlite: '%s': %s failed: %s (SQLite code %d)",
                      s->path, what, sqlite3_errmsg(s->db), rc);
}

/* Run a statement that returns no rows and reset it: SQLITE_OK or the error
 * (sqlite3_errmsg still describes it: reset keeps the statement's error). */
static int run_stmt(sqb *s, int i)
{
    int rc = sqlite3_step(s->st[i]);
    sqlite3_reset(s->st[i]);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Undo the open transaction, if any (after a failure; its own result cannot
 * be reported better than the failure that led here). */
static void rollback(sqb *s)
{
    if (!sqlite3_get_autocommit(s->db))
        run_stmt(s, ST_ROLLBACK);
}

/* The count that statement `i` (ST_COUNT, ST_COUNT_TAKEN, ST_COUNT_WAITING) answers. */
static int count_of(sqb *s, int i, int64_t *n)
{
    sqlite3_stmt *c = s->st[i];
    int rc = sqlite3_step(c);
    *n = 0;
    if (rc == SQLITE_ROW) {
        *n = sqlite3_column_int64(c, 0);
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_OK;
    }
    sqlite3_reset(c);
    return rc;
}

/* ---- create / destroy -------------------------------------------------- */

static int read_settings(tern_ctx *ctx, sqb *s, sqb_open_opts *o)
{
    const char *path, *sync;
    int64_t capacity, busy;
    /* the core checked and defaulted these before create(); a failure here
     * left its own message, which names the key */
    int rc = host->get_string(ctx, "path", &path);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "capacity", &capacity);
    if (rc == TERN_OK)
        rc = host->get_string(ctx, "synchronous", &sync);
    if (rc == TERN_OK)
        rc = host->get_int(ctx, "busy_timeout_ms", &busy);
    if (rc != TERN_OK)
        return rc;
    if (path[0] == '\0')
        return host->setting_error(ctx, "path", "is empty; name the database file, e.g. "
                                   "\"buffer.db\" (relative to the working directory)");
    if (capacity < 0)
        return host->setting_error(ctx, "capacity", "%lld is negative; use 0 for unbounded "
                                   "or the most records the file may hold", (long long)capacity);
    if (busy < 0 || busy > INT_MAX)
        return host->setting_error(ctx, "busy_timeout_ms", "%lld is out of range [0, %d]",
                                   (long long)busy, INT_MAX);
    int level = 0; /* the index in "full|normal" */
    rc = buffer_setting_choice(host, ctx, "synchronous", sync, "full|normal", &level);
    if (rc != TERN_OK)
        return rc;
    o->sync_full = level == 0;
    s->path = o->path = path;
    s->capacity = (uint64_t)capacity;
    s->busy_timeout_ms = o->busy_timeout_ms = (int)busy;
    return TERN_OK;
}

/* Finalize the statements and close the connection. */
static void close_db(sqb *s)
{
    for (int i = 0; i < ST_N; i++) {
        sqlite3_finalize(s->st[i]); /* NULL is a no-op */
        s->st[i] = NULL;
    }
    if (s->db) {
        int rc = sqlite3_close_v2(s->db);
        if (rc != SQLITE_OK)
            host->log(s->ctx, TERN_LOG_WARN, "sqlite: closing '%s' failed: %s", s->path,
                      sqlite3_errstr(rc));
        s->db = NULL;
    }
}

static int prepare_all(sqb *s)
{
    for (int i = 0; i < ST_N; i++) {
        int rc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                    &s->st[i], NULL);
        if (rc != SQLITE_OK)
            return db_fail(s, rc, "preparing \"%s\"", stmt_sql[i]);
    }
    return TERN_OK;
}

static int sqb_create(tern_ctx *ctx, void **state)
{
    sqb *s = calloc(1, sizeof *s);
    if (!s)
        return host->fail(ctx, TERN_ENOMEM, "sqlite: out of memory creating the buffer");
    s->ctx = ctx;
    list_init(&s->out);
    sqb_open_opts o = {0};
    int rc = read_settings(ctx, s, &o);
    if (rc == TERN_OK)
        rc = buffer_init_sync(host, ctx, "sqlite", &s->lock, &s->not_empty, &s->not_full);
    if (rc != TERN_OK) {
        free(s);
        return rc;
    }
    rc = sqb_open(host, ctx, &o, &s->db);
    if (rc == TERN_OK)
        rc = prepare_all(s);
    int64_t held = 0, taken = 0;
    if (rc == TERN_OK) {
        int src = count_of(s, ST_COUNT, &held);
        if (src == SQLITE_OK)
            src = count_of(s, ST_COUNT_TAKEN, &taken);
        if (src != SQLITE_OK)
            rc = db_fail(s, src, "counting the records left in the file");
    }
    if (rc != TERN_OK) {
        close_db(s);
        buffer_destroy_sync(&s->lock, &s->not_empty, &s->not_full);
        free(s);
        return rc;
    }
    if (held > 0 && taken > 0)
        host->log(ctx, TERN_LOG_INFO,
                  "sqlite: '%s' holds %lld record%s not consumed yet, %lld of them handed "
                  "out and never committed (not handed out again until recovered)",
                  s->path, (long long)held, held == 1 ? "" : "s", (long long)taken);
    else if (held > 0)
        host->log(ctx, TERN_LOG_INFO, "sqlite: '%s' holds %lld record%s not consumed yet",
                  s->path, (long long)held, held == 1 ? "" : "s");
    *state = s;
    return TERN_OK;
}

static void sqb_destroy(void *state)
{
    sqb *s = state;
    if (!s)
        return;
    list_free_all(&s->out); /* records a consumer never released */
    close_db(s);
    buffer_destroy_sync(&s->lock, &s->not_empty, &s->not_full);
    free(s);
}

/* ---- put --------------------------------------------------------------- */

static int bind_meta_and_data(sqb *s, const void *data, size_t len, const tern_record_meta *meta)
{
    sqlite3_stmt *ins = s->st[ST_INSERT];
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    int64_t put_ns = (int64_t)wall.tv_sec * 1000000000 + wall.tv_nsec;
    int rc = sqlite3_bind_int64(ins, 1, (sqlite3_int64)meta->id);
    if (rc == SQLITE_OK)
        rc = TERN_HAS(meta, version) ? sqlite3_bind_int64(ins, 2, meta->version)
                                     : sqlite3_bind_null(ins, 2);
    if (rc == SQLITE_OK)
        rc = TERN_HAS(meta, version) && TERN_HAS(meta, batch) ? sqlite3_bind_int64(ins, 3,
                                                                                   meta->batch)
                                                              : sqlite3_bind_null(ins, 3);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(ins, 4, put_ns);
    if (rc == SQLITE_OK)
        /* zeroblob(0): an empty blob, since a blob bound from NULL would be NULL */
        rc = len ? sqlite3_bind_blob64(ins, 5, data, (sqlite3_uint64)len, SQLITE_STATIC)
                 : sqlite3_bind_zeroblob(ins, 5, 0);
    return rc;
}

/* One attempt at storing the record (lock held): TERN_OK once committed,
 * TRY_LATER with *why (the file is full, or locked by another connection), or
 * a failure status after host->fail. The file is unchanged unless TERN_OK. */
static int try_put(sqb *s, const void *data, size_t len, const tern_record_meta *meta,
                   why_wait *why)
{
    unsigned long long id = (unsigned long long)meta->id;
    int rc = run_stmt(s, ST_BEGIN);
    if (is_busy(rc)) {
        *why = WAIT_LOCK;
        return TRY_LATER;
    }
    if (rc != SQLITE_OK)
        return db_fail(s, rc, "starting the transaction to put record %llu", id);
    int st = TERN_OK;
    if (s->capacity) {
        int64_t n;
        rc = count_of(s, ST_COUNT_WAITING, &n);
        if (rc != SQLITE_OK) {
            st = db_fail(s, rc, "counting records to put record %llu", id);
        } else if ((uint64_t)n >= s->capacity) {
            rollback(s);
            *why = WAIT_FULL;
            return TRY_LATER;
        }
    }
    if (st == TERN_OK) {
        sqlite3_stmt *ins = s->st[ST_INSERT];
        rc = bind_meta_and_data(s, data, len, meta);
        if (rc == SQLITE_OK) {
            rc = sqlite3_step(ins);
            if (rc == SQLITE_DONE)
                rc = SQLITE_OK;
        }
        if ((rc & 0xff) == SQLITE_TOOBIG)
            st = host->fail(s->ctx, TERN_EINVAL,
                            "sqlite: record %llu of %zu bytes is larger than SQLite allows "
                            "(%d bytes); make records smaller", id, len,
                            sqlite3_limit(s->db, SQLITE_LIMIT_LENGTH, -1));
        else if (rc != SQLITE_OK)
            st = db_fail(s, rc, "storing record %llu (%zu bytes)", id, len);
        sqlite3_reset(ins);
        sqlite3_clear_bindings(ins); /* drop the pointer to the caller's bytes */
    }
    if (st == TERN_OK) {
        rc = run_stmt(s, ST_COMMIT);
        if (rc != SQLITE_OK)
            st = db_fail(s, rc, "committing record %llu", id);
    }
    if (st != TERN_OK)
        rollback(s);
    return st;
}

static int sqb_put(void *state, const void *data, size_t len, const tern_record_meta *meta,
                   int64_t timeout_ms)
{
    sqb *s = state;
    /* the longest record: SQLite counts bytes in an int64, and a copy adds a node */
    size_t max_len = SIZE_MAX - sizeof(node) < (size_t)INT64_MAX ? SIZE_MAX - sizeof(node)
                                                                   : (size_t)INT64_MAX;
    int rc = buffer_check_put_args(host, s->ctx, "sqlite", data, len, meta, max_len);
    if (rc != TERN_OK)
        return rc;
    struct timespec dl = buffer_deadline_after(timeout_ms);
    why_wait why = WAIT_FULL;
    int expired = 0;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        if (s->closed) {
            rc = TERN_ECLOSED;
            break;
        }
        rc = try_put(s, data, len, meta, &why);
        if (rc != TRY_LATER)
            break;
        if (expired) {
            rc = TERN_ETIMEDOUT;
            break;
        }
        expired = wait_poll(s, &s->not_full, timeout_ms, &dl) == ETIMEDOUT;
    }
    if (rc == TERN_OK) {
        s->n_put++;
        pthread_cond_signal(&s->not_empty);
    }
    pthread_mutex_unlock(&s->lock);
    unsigned long long id = (unsigned long long)meta->id;
    if (rc == TERN_ECLOSED)
        return buffer_fail_put_closed(host, s->ctx, "sqlite", id);
    if (rc == TERN_ETIMEDOUT && why == WAIT_LOCK)
        return host->fail(s->ctx, TERN_ETIMEDOUT,
                          "sqlite: put of record %llu timed out after %lld ms waiting for the "
                          "write lock on '%s', which another connection holds; raise the "
                          "timeout or busy_timeout_ms", id, (long long)timeout_ms, s->path);
    if (rc == TERN_ETIMEDOUT)
        return host->fail(s->ctx, TERN_ETIMEDOUT,
                          "sqlite: put of record %llu timed out after %lld ms with '%s' full "
                          "(capacity %llu records); consumers are slower than producers: "
                          "raise capacity (0: unbounded) or the timeout", id,
                          (long long)timeout_ms, s->path, (unsigned long long)s->capacity);
    return rc;
}

/* ---- get / release ----------------------------------------------------- */

/* A node from the current row of ST_SELECT, or NULL when out of memory. */
static node *node_from_row(sqlite3_stmt *sel)
{
    const void *blob = sqlite3_column_blob(sel, 4);
    size_t len = (size_t)sqlite3_column_bytes(sel, 4);
    if (!blob && len)
        return NULL; /* SQLite ran out of memory reading it */
    node *x = malloc(sizeof *x + len);
    if (!x)
        return NULL;
    if (len)
        memcpy(x->data, blob, len);
    x->len = len;
    memset(&x->meta, 0, sizeof x->meta);
    x->meta.id = (uint64_t)sqlite3_column_int64(sel, 1);
    /* NULL columns: the producer's meta ended before them (members only grow) */
    x->meta.size = offsetof(tern_record_meta, version);
    if (sqlite3_column_type(sel, 2) != SQLITE_NULL) {
        x->meta.version = sqlite3_column_int64(sel, 2);
        x->meta.size = offsetof(tern_record_meta, batch);
        if (sqlite3_column_type(sel, 3) != SQLITE_NULL) {
            x->meta.batch = sqlite3_column_int64(sel, 3);
            x->meta.size = sizeof x->meta;
        }
    }
    list_init(&x->l);
    return x;
}

/* One attempt at taking up to `want` records (lock held): TERN_OK with
 * out[0..*got) filled (*got >= 1) once the hand-out committed (the records
 * marked taken), TRY_LATER with *why (no waiting record, or the file locked
 * by another connection), or a failure status after host->fail, with the
 * records still waiting. */
static int try_get(sqb *s, tern_record *out, size_t want, size_t *got, why_wait *why)
{
    *got = 0;
    /* a look without the write lock, so idle consumers do not take it */
    int rc = sqlite3_step(s->st[ST_PROBE]);
    sqlite3_reset(s->st[ST_PROBE]);
    if (rc == SQLITE_DONE) {
        *why = WAIT_EMPTY;
        return TRY_LATER;
    }
    if (is_busy(rc)) {
        *why = WAIT_LOCK;
        return TRY_LATER;
    }
    if (rc != SQLITE_ROW)
        return db_fail(s, rc, "looking for records");
    rc = run_stmt(s, ST_BEGIN);
    if (is_busy(rc)) {
        *why = WAIT_LOCK;
        return TRY_LATER;
    }
    if (rc != SQLITE_OK)
        return db_fail(s, rc, "starting the transaction to get records");

    qlink taken;
    list_init(&taken);
    size_t n = 0;
    int64_t last_seq = 0;
    int st = TERN_OK;
    sqlite3_stmt *sel = s->st[ST_SELECT];
    rc = sqlite3_bind_int64(sel, 1, want > (size_t)INT64_MAX ? INT64_MAX : (sqlite3_int64)want);
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        if (n == want || (rc = sqlite3_step(sel)) != SQLITE_ROW)
            break;
        node *x = node_from_row(sel);
        if (!x) {
            st = host->fail(s->ctx, TERN_ENOMEM, "sqlite: out of memory copying record %lld "
                            "(%d bytes) out of '%s'; the records stay waiting in the file",
                            (long long)sqlite3_column_int64(sel, 1),
                            sqlite3_column_bytes(sel, 4), s->path);
            break;
        }
        last_seq = sqlite3_column_int64(sel, 0);
        list_push_back(&taken, &x->l);
        n++;
    }
    if (st == TERN_OK && rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        st = db_fail(s, rc, "reading records");
    sqlite3_reset(sel);
    if (st == TERN_OK && n == 0) { /* another connection took them meanwhile */
        rollback(s);
        *why = WAIT_EMPTY;
        return TRY_LATER;
    }
    if (st == TERN_OK) {
        rc = sqlite3_bind_int64(s->st[ST_TAKE], 1, last_seq);
        if (rc == SQLITE_OK)
            rc = run_stmt(s, ST_TAKE);
        if (rc != SQLITE_OK)
            st = db_fail(s, rc, "marking %zu records taken", n);
    }
    if (st == TERN_OK) {
        rc = run_stmt(s, ST_COMMIT);
        if (rc != SQLITE_OK)
            st = db_fail(s, rc, "committing the hand-out of %zu records", n);
    }
    if (st != TERN_OK) {
        rollback(s);
        list_free_all(&taken);
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        node *x = (node *)list_pop_front(&taken);
        list_push_back(&s->out, &x->l);
        buffer_fill_record(&out[i], &x->meta, x->data, x->len, 0); /* each once */
    }
    *got = n;
    return TERN_OK;
}

static int sqb_get(void *state, tern_record *out, size_t want, size_t *got, int64_t timeout_ms)
{
    sqb *s = state;
    int rc = buffer_check_get_args(host, s->ctx, "sqlite", out, want, got);
    if (rc != TERN_OK)
        return rc;
    struct timespec dl = buffer_deadline_after(timeout_ms);
    why_wait why = WAIT_EMPTY;
    size_t n = 0;
    int expired = 0;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        rc = try_get(s, out, want, &n, &why);
        if (rc != TRY_LATER)
            break;
        if (why == WAIT_EMPTY && s->closed) {
            rc = TERN_ECLOSED;
            break;
        }
        if (expired) {
            rc = TERN_ETIMEDOUT;
            break;
        }
        expired = wait_poll(s, &s->not_empty, timeout_ms, &dl) == ETIMEDOUT;
    }
    if (rc == TERN_OK) {
        /* room made: a taken record stays in the file until commit, but no
         * longer counts against the capacity */
        s->n_got += n;
        pthread_cond_broadcast(&s->not_full);
        if (n == want)
            pthread_cond_signal(&s->not_empty); /* maybe more left for another getter */
    }
    pthread_mutex_unlock(&s->lock);
    *got = n;
    if (rc == TERN_ECLOSED)
        return host->fail(s->ctx, TERN_ECLOSED,
                          "sqlite: get on a closed buffer with no records left in '%s'; stop "
                          "consuming", s->path);
    if (rc == TERN_ETIMEDOUT && why == WAIT_LOCK)
        return host->fail(s->ctx, TERN_ETIMEDOUT,
                          "sqlite: get timed out after %lld ms waiting for the write lock on "
                          "'%s', which another connection holds; raise the timeout or "
                          "busy_timeout_ms", (long long)timeout_ms, s->path);
    if (rc == TERN_ETIMEDOUT)
        return host->fail(s->ctx, TERN_ETIMEDOUT,
                          "sqlite: get found no record in '%s' within %lld ms; producers are "
                          "slower than the timeout: raise it, or pass -1 to wait without limit",
                          s->path, (long long)timeout_ms);
    return rc;
}

static void sqb_release(void *state, tern_record *recs, size_t n)
{
    sqb *s = state;
    buffer_release_nodes(&s->lock, recs, n);
}

/* ---- commit / recover -------------------------------------------------- */

/* A failure inside the transaction of commit or recover (lock held): the
 * message first (sqlite3_errmsg still describes it), then the rollback. */
static int fail_in_txn(sqb *s, int rc, const char *what)
{
    int st = db_fail(s, rc, "%s", what);
    rollback(s);
    return st;
}

static int sqb_commit(void *state, const uint64_t *ids, size_t n)
{
    sqb *s = state;
    if (n == 0)
        return TERN_OK;
    if (!ids)
        return host->fail(s->ctx, TERN_EINVAL, "sqlite: commit of %zu records with ids NULL; "
                          "pass the ids (meta.id) of the records to forget", n);
    char what[96];
    pthread_mutex_lock(&s->lock);
    int st = TERN_OK;
    int rc = run_stmt(s, ST_BEGIN);
    if (rc != SQLITE_OK) {
        snprintf(what, sizeof what, "starting the transaction to commit %zu records", n);
        st = fail_in_txn(s, rc, what);
    }
    sqlite3_stmt *del = s->st[ST_FORGET];
    for (size_t i = 0; st == TERN_OK && i < n; i++) {
        rc = sqlite3_bind_int64(del, 1, (sqlite3_int64)ids[i]);
        if (rc == SQLITE_OK)
            rc = run_stmt(s, ST_FORGET);
        if (rc != SQLITE_OK) {
            snprintf(what, sizeof what, "deleting committed record %llu (%zu records)",
                     (unsigned long long)ids[i], n);
            st = fail_in_txn(s, rc, what);
        }
    }
    if (st == TERN_OK) {
        rc = run_stmt(s, ST_COMMIT);
        if (rc != SQLITE_OK) {
            snprintf(what, sizeof what, "committing the deletion of %zu committed records", n);
            st = fail_in_txn(s, rc, what);
        }
    }
    if (st == TERN_OK)
        pthread_cond_broadcast(&s->not_full); /* room for blocked puts */
    pthread_mutex_unlock(&s->lock);
    return st;
}

static int sqb_recover(void *state, uint64_t *ids, size_t cap, size_t *n)
{
    sqb *s = state;
    if (!n || (!ids && cap > 0))
        return host->fail(s->ctx, TERN_EINVAL,
                          "sqlite: recover with %s NULL; pass an array of cap ids (or cap 0) "
                          "and the count to fill", n ? "ids" : "n");
    *n = 0;
    pthread_mutex_lock(&s->lock);
    int st = TERN_OK;
    int rc = run_stmt(s, ST_BEGIN);
    if (rc != SQLITE_OK)
        st = fail_in_txn(s, rc, "starting the transaction to recover records");
    int back = 0; /* records made waiting again */
    if (st == TERN_OK) {
        rc = run_stmt(s, ST_UNTAKE);
        if (rc != SQLITE_OK)
            st = fail_in_txn(s, rc, "handing back records taken and never committed");
        else
            back = sqlite3_changes(s->db);
    }
    size_t count = 0;
    if (st == TERN_OK) {
        sqlite3_stmt *sel = s->st[ST_IDS];
        while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
            if (count < cap)
                ids[count] = (uint64_t)sqlite3_column_int64(sel, 0);
            count++;
        }
        sqlite3_reset(sel);
        if (rc != SQLITE_DONE)
            st = fail_in_txn(s, rc, "listing the records held");
    }
    if (st == TERN_OK) {
        rc = run_stmt(s, ST_COMMIT);
        if (rc != SQLITE_OK)
            st = fail_in_txn(s, rc, "committing the recovery of records");
    }
    if (st == TERN_OK && back > 0)
        pthread_cond_broadcast(&s->not_empty); /* records to hand out again */
    pthread_mutex_unlock(&s->lock);
    if (st != TERN_OK)
        return st;
    *n = count;
    if (back > 0)
        host->log(s->ctx, TERN_LOG_INFO,
                  "sqlite: '%s': %d record%s handed out and never committed made waiting "
                  "again, in %s original place%s; %zu record%s held in all", s->path, back,
                  back == 1 ? "" : "s", back == 1 ? "its" : "their", back == 1 ? "" : "s",
                  count, count == 1 ? "" : "s");
    return TERN_OK;
}

/* ---- close / stats ----------------------------------------------------- */

static void sqb_close(void *state)
{
    sqb *s = state;
    buffer_close(&s->lock, &s->closed, &s->not_empty, &s->not_full);
}

static int sqb_stats(void *state, tern_buffer_stats *out)
{
    sqb *s = state;
    int rc_out = buffer_check_stats_out(host, s->ctx, "sqlite", out);
    if (rc_out != TERN_OK)
        return rc_out;
    int64_t held = 0;
    pthread_mutex_lock(&s->lock);
    int rc = count_of(s, ST_COUNT, &held);
    int st = rc == SQLITE_OK ? TERN_OK : db_fail(s, rc, "counting records for stats");
    uint64_t n_put = s->n_put, n_got = s->n_got;
    pthread_mutex_unlock(&s->lock);
    if (st != TERN_OK)
        return st;
    /* dropped 0: puts wait for room; skipped 0: no notion of staleness */
    tern_buffer_stats v = {.held = (uint64_t)held, .capacity = s->capacity, .put = n_put,
                           .got = n_got};
    buffer_write_stats(out, &v);
    return TERN_OK;
}

/* ---- descriptor -------------------------------------------------------- */

static const tern_buffer_ops sqb_ops = {
    .size = sizeof sqb_ops,
    .create = sqb_create,
    .destroy = sqb_destroy,
    .put = sqb_put,
    .get = sqb_get,
    .release = sqb_release,
    .close = sqb_close,
    .stats = sqb_stats,
    .advance = NULL, /* no notion of staleness */
    .commit = sqb_commit,
    .recover = sqb_recover,
};

static const tern_setting_spec sqb_settings[] = {
    TERN_SETTING(.name = "path", .type = TERN_SETTING_STRING, .flags = TERN_SETTING_IN_RUN_DIR,
                 .def = "\"buffer.sqlite\"", .aka = "file|db|database|filename",
                 .doc = "the SQLite database file holding the records, relative to the "
                        "working directory; created if absent (its directory must exist); "
                        "default: buffer.sqlite in the run directory"),
    TERN_SETTING(.name = "capacity", .type = TERN_SETTING_INT, .def = "0", .min = 0, .max = 1e9,
                 .aka = "size|max_size|max_records|cap",
                 .doc = "most records waiting to be handed out before put waits for "
                        "room (0: unbounded); records handed out and not committed yet "
                        "do not count"),
    TERN_SETTING(.name = "synchronous", .type = TERN_SETTING_STRING, .def = "\"full\"",
                 .choices = "full|normal", .aka = "sync|fsync|durability",
                 .doc = "full = an acknowledged put survives power loss; normal = it survives "
                        "a crash of the process (faster; the last puts may be lost on power "
                        "loss)"),
    TERN_SETTING(.name = "busy_timeout_ms", .type = TERN_SETTING_INT, .def = "5000", .min = 0,
                 .max = 86400000, .aka = "busy_timeout|lock_timeout_ms|lock_timeout",
                 .doc = "milliseconds one SQLite call waits for a lock another process holds "
                        "on the file"),
    TERN_SETTINGS_END,
};

static const tern_plugin_descriptor sqb_descriptor = {
    .size = sizeof sqb_descriptor,
    .abi_major = TERN_ABI_MAJOR,
    .abi_minor = TERN_ABI_MINOR,
    .kind = TERN_KIND_BUFFER,
    .name = "sqlite",
    .version = "1.1.0",
    .summary = "durable first-in first-out queue of records in an SQLite file (WAL), "
               "shared by processes, consumed exactly once (commit, recover)",
    .caps = TERN_CAP_THREAD_SAFE,
    .ops = &sqb_ops,
    .settings = sqb_settings,
};

TERN_PLUGIN_EXPORT const tern_plugin_descriptor *tern_plugin_entry(const tern_host *h)
{
    host = h;
    return &sqb_descriptor;
}
