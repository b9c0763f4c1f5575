/*
 * schema.c: opening the file of a `sqlite` buffer (see sqlite.c for the
 * design and the ops).
 *
 * Order of work, chosen so that a file which is not ours is never changed:
 *
 *   1. sqlite3_open_v2(READWRITE | CREATE): a missing file is created empty;
 *      a missing directory fails here (SQLITE_CANTOPEN).
 *   2. Read PRAGMA application_id, PRAGMA user_version and the number of
 *      schema objects, in one read transaction (one snapshot), without a
 *      write lock. A file that is not an SQLite
 *      database fails here (SQLITE_NOTADB); a damaged one with SQLITE_CORRUPT.
 *      A file with another application_id (or with id 0 and objects of its
 *      own) is refused as "not a tern buffer"; a user_version above
 *      SQB_SCHEMA_VERSION as "written by a newer tern". A file of ours must
 *      then read whole (PRAGMA quick_check): one cut short or overwritten in
 *      places is refused as damaged. Nothing was written.
 *   3. PRAGMA journal_mode=WAL, checked: SQLite answers with the mode in force
 *      and keeps the old one where WAL cannot work (no shared memory, an
 *      in-memory database), which is refused; tried again while another
 *      process holds the lock (see set_wal).
 *   4. PRAGMA synchronous (FULL or NORMAL; per connection, not stored).
 *   5. BEGIN IMMEDIATE (the write lock, so two processes opening a new file at
 *      once do not both create or migrate it), read the header again, then
 *      either create the schema (application_id, user_version, the table and
 *      its indexes in this one transaction: a crash before COMMIT leaves an
 *      empty file, which the next open treats as new) or check that the
 *      records table is there with the columns of the file's version; a
 *      schema-1 file is then migrated (below). COMMIT.
 *
 * Migration from schema 1 (tern before buffer ABI 1.6, where get() deleted
 * the rows it handed out): in the transaction of step 5, ALTER TABLE records
 * ADD COLUMN taken INTEGER NOT NULL DEFAULT 0, create the two indexes, set
 * user_version = 2. Every row of a schema-1 file is a record not handed out
 * yet, which is what taken = 0 says, so the migration is exact; the rows keep
 * their seq, so their order. A crash before COMMIT leaves the file at schema
 * 1, migrated again by the next open. Logged at info level once committed.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <tern/abi.h>

#include "sqlite_schema.h"

/* The table. seq orders records by commit (AUTOINCREMENT: a seq is never
 * reused, even after the newest record was consumed); version and batch are
 * NULL when the producer's tern_record_meta predates them; taken is 1 once
 * get() handed the record out (until commit() deletes it or recover() sets it
 * back to 0). taken comes last, where schema 1's ALTER TABLE puts it, so a
 * migrated file and a new one have the same table. */
#define SQB_CREATE_SQL                                                                    \
    "CREATE TABLE records("                                                               \
    "seq INTEGER PRIMARY KEY AUTOINCREMENT, "                                             \
    "id INTEGER NOT NULL, "                                                               \
    "version INTEGER, "                                                                   \
    "batch INTEGER, "                                                                     \
    "put_unix_ns INTEGER NOT NULL, "                                                      \
    "data BLOB NOT NULL, "                                                                \
    "taken INTEGER NOT NULL DEFAULT 0)"

/* The indexes (schema 2): by id for commit (O(log n) per id), and by (taken,
 * seq) so that get finds the oldest waiting records without reading the
 * taken ones; count(*) reads the smaller of them rather than the table. */
#define SQB_INDEX_SQL                                                                     \
    "CREATE INDEX records_id ON records(id); "                                            \
    "CREATE INDEX records_waiting ON records(taken, seq)"

/* Schema 1 to 2, inside the transaction of step 5. */
#define SQB_MIGRATE_1_SQL                                                                 \
    "ALTER TABLE records ADD COLUMN taken INTEGER NOT NULL DEFAULT 0; " SQB_INDEX_SQL     \
    "; PRAGMA user_version = 2"

typedef struct opener {
    const tern_host *host;
    tern_ctx *ctx;
    const sqb_open_opts *opts;
    sqlite3 *db;
    int rc;        /* the SQLite code of the failing call */
    char err[512]; /* its message, copied at once (later calls overwrite it) */
} opener;

/* What step 2 found. */
typedef enum file_kind { FILE_NEW, FILE_OURS } file_kind;

typedef struct header {
    int64_t app_id, user_version, objects;
} header;

int sqb_status_of(int sqlite_rc)
{
    switch (sqlite_rc & 0xff) {
    case SQLITE_NOMEM:
        return TERN_ENOMEM;
    case SQLITE_BUSY:
        return TERN_ETIMEDOUT;
    case SQLITE_TOOBIG:
        return TERN_EINVAL;
    default:
        return TERN_EIO;
    }
}

/* Keep the code and message of a failed call; returns rc. */
static int note(opener *o, int rc, const char *msg)
{
    o->rc = rc;
    snprintf(o->err, sizeof o->err, "%s", msg ? msg : sqlite3_errstr(rc));
    return rc;
}

/* The message for a failed step of the open, by the kind of failure; `what`
 * says what was being done ("reading the header"). Returns the status. */
static int open_failed(opener *o, const char *what)
{
    const tern_host *host = o->host;
    const char *path = o->opts->path;
    switch (o->rc & 0xff) {
    case SQLITE_NOTADB:
        return host->setting_error(o->ctx, "path",
                                   "'%s' is not a SQLite database (%s): it is damaged, or "
                                   "another program's file; move it away (or point path at "
                                   "another file) and start again with a new file",
                                   path, o->err);
    case SQLITE_CORRUPT:
        return host->setting_error(o->ctx, "path", SQB_DAMAGED_FMT, path, o->err, path, path);
    case SQLITE_CANTOPEN:
        return host->setting_error(o->ctx, "path",
                                   "cannot open or create '%s' (%s); check that its directory "
                                   "exists and that this process may write there",
                                   path, o->err);
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return host->setting_error(o->ctx, "path",
                                   "cannot write '%s' (%s); a buffer file must be writable "
                                   "(check its permissions and those of its directory)",
                                   path, o->err);
    case SQLITE_BUSY:
        return host->fail(o->ctx, TERN_ETIMEDOUT,
                          "sqlite: '%s' stayed locked by another connection for longer than "
                          "busy_timeout_ms = %d while %s (%s); retry, or raise busy_timeout_ms",
                          path, o->opts->busy_timeout_ms, what, o->err);
    default:
        return host->fail(o->ctx, sqb_status_of(o->rc),
                          "sqlite: '%s': %s failed: %s (SQLite code %d)", path, what, o->err,
                          o->rc);
    }
}

/* Run SQL without results (one or more statements). */
static int exec_sql(opener *o, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(o->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        note(o, rc, msg);
    sqlite3_free(msg);
    return rc;
}

/* The integer that `sql` answers in its first row and column. */
static int query_int(opener *o, const char *sql, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(o->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *out = sqlite3_column_int64(st, 0);
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            rc = SQLITE_INTERNAL; /* these queries always answer one row */
        }
    }
    if (rc != SQLITE_OK)
        note(o, rc, sqlite3_errmsg(o->db));
    sqlite3_finalize(st);
    return rc;
}

/* The three values from one snapshot of the file. Outside a transaction each
 * query would be its own read, and another process creating the schema
 * between them would show a file that is neither new nor ours (application_id
 * 0 with the table there), refused as "not a tern buffer" (seen with the
 * ranks of an MPI run opening one new file at once). */
static int read_header(opener *o, header *h)
{
    int own = sqlite3_get_autocommit(o->db); /* not inside the caller's BEGIN IMMEDIATE */
    if (own && exec_sql(o, "BEGIN") != SQLITE_OK)
        return open_failed(o, "reading the file's header");
    int rc = SQLITE_OK;
    if (query_int(o, "PRAGMA application_id", &h->app_id) != SQLITE_OK ||
        query_int(o, "PRAGMA user_version", &h->user_version) != SQLITE_OK ||
        query_int(o, "SELECT count(*) FROM sqlite_master", &h->objects) != SQLITE_OK)
        rc = SQLITE_ERROR;
    if (own && !sqlite3_get_autocommit(o->db))
        sqlite3_exec(o->db, rc == SQLITE_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return open_failed(o, "reading the file's header");
    return TERN_OK;
}

/* Is the file new, ours, or one to refuse (status after setting_error)? */
static int classify(opener *o, const header *h, file_kind *kind)
{
    const char *path = o->opts->path;
    if (h->app_id == SQB_APPLICATION_ID) {
        if (h->user_version > SQB_SCHEMA_VERSION)
            return o->host->setting_error(
                o->ctx, "path",
                "'%s' was written by a newer tern (schema %lld); this tern reads schema %d: "
                "upgrade tern, or point path at another file",
                path, (long long)h->user_version, SQB_SCHEMA_VERSION);
        if (h->user_version < 1)
            return o->host->setting_error(
                o->ctx, "path",
                "'%s' is marked as a tern buffer but has no schema version (user_version "
                "%lld): it is damaged; move it away and start from a new file",
                path, (long long)h->user_version);
        *kind = FILE_OURS;
        return TERN_OK;
    }
    if (h->app_id == 0 && h->user_version == 0 && h->objects == 0) {
        *kind = FILE_NEW; /* a new or empty file: ours to set up */
        return TERN_OK;
    }
    return o->host->setting_error(
        o->ctx, "path",
        "'%s' is a SQLite database but not a tern buffer (application_id %lld, user_version "
        "%lld, schema objects %lld); point path at a new file",
        path, (long long)h->app_id, (long long)h->user_version, (long long)h->objects);
}

/* One PRAGMA journal_mode=WAL; the mode in force into mode[32]. */
static int try_wal(opener *o, char *mode)
{
    sqlite3_stmt *st = NULL;
    mode[0] = '\0';
    int rc = sqlite3_prepare_v2(o->db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            const unsigned char *m = sqlite3_column_text(st, 0);
            snprintf(mode, 32, "%s", m ? (const char *)m : "?");
            rc = SQLITE_OK;
        } else if (rc == SQLITE_DONE) {
            rc = SQLITE_OK; /* no answer: caught below as mode "" */
        }
    }
    if (rc != SQLITE_OK)
        note(o, rc, sqlite3_errmsg(o->db));
    sqlite3_finalize(st);
    return rc;
}

/* The switch reads the file, then needs its write lock: when another process
 * holds that lock, SQLite answers SQLITE_BUSY at once instead of calling the
 * busy handler (a reader waiting for a writer could deadlock), which happens
 * when the ranks of an MPI run open one new file together. The switch is
 * idempotent, so it is tried again until busy_timeout_ms has passed. */
static int set_wal(opener *o)
{
    char mode[32];
    int rc, waited_ms = 0;
    while ((rc = try_wal(o, mode)) != SQLITE_OK && (rc & 0xff) == SQLITE_BUSY &&
           waited_ms < o->opts->busy_timeout_ms) {
        sqlite3_sleep(5);
        waited_ms += 5;
    }
    if (rc != SQLITE_OK)
        return open_failed(o, "switching to WAL mode");
    if (strcasecmp(mode, "wal") != 0)
        return o->host->setting_error(
            o->ctx, "path",
            "SQLite could not switch '%s' to WAL mode (the journal mode stays '%s'); a sqlite "
            "buffer needs a file on a local filesystem that supports shared memory (not an "
            "in-memory database or a network filesystem)",
            o->opts->path, mode);
    return TERN_OK;
}

/* Create the schema in a new file (inside the caller's transaction). */
static int create_schema(opener *o)
{
    char sql[1024];
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = %d; %s; %s;",
             SQB_APPLICATION_ID, SQB_SCHEMA_VERSION, SQB_CREATE_SQL, SQB_INDEX_SQL);
    if (exec_sql(o, sql) != SQLITE_OK)
        return open_failed(o, "creating the records table");
    return TERN_OK;
}

/* Check that a file of ours has the table with the columns its schema
 * `version` (1 or SQB_SCHEMA_VERSION) has. */
static int check_schema(opener *o, int64_t version)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(o->db,
                                version >= 2 ? "SELECT seq, id, version, batch, put_unix_ns, "
                                               "data, taken FROM records LIMIT 0"
                                             : "SELECT seq, id, version, batch, put_unix_ns, "
                                               "data FROM records LIMIT 0",
                                -1, &st, NULL);
    if (rc != SQLITE_OK)
        note(o, rc, sqlite3_errmsg(o->db));
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        return TERN_OK;
    if ((rc & 0xff) == SQLITE_ERROR) /* no such table or column */
        return o->host->setting_error(
            o->ctx, "path",
            "'%s' is a tern buffer (schema %lld) without a usable records table (%s): it is "
            "damaged; move it away and start from a new file",
            o->opts->path, (long long)version, o->err);
    return open_failed(o, "checking the records table");
}

/* Migrate a checked schema-1 file to schema 2 (inside the caller's
 * transaction; see the header comment). */
static int migrate_from_1(opener *o)
{
    if (exec_sql(o, SQB_MIGRATE_1_SQL) != SQLITE_OK)
        return open_failed(o, "migrating the file from schema 1 to schema 2");
    return TERN_OK;
}

/* A file of ours must read whole: a file cut short (truncated, a partial
 * copy) or overwritten in places reads fine in its first pages and fails
 * later, in the middle of a run. PRAGMA quick_check reads every page of it
 * (O(size), milliseconds for a run's buffer) without writing. */
static int check_whole(opener *o)
{
    sqlite3_stmt *st = NULL;
    char first[256] = "";
    int rows = 0;
    int rc = sqlite3_prepare_v2(o->db, "PRAGMA quick_check(4)", -1, &st, NULL);
    while (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc != SQLITE_ROW)
            break;
        const unsigned char *t = sqlite3_column_text(st, 0);
        if (rows++ == 0)
            snprintf(first, sizeof first, "%s", t ? (const char *)t : "?");
        rc = SQLITE_OK;
    }
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    if (rc != SQLITE_OK)
        note(o, rc, sqlite3_errmsg(o->db));
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return open_failed(o, "checking that the file reads whole");
    if (rows == 1 && strcmp(first, "ok") == 0)
        return TERN_OK;
    char why[300];
    snprintf(why, sizeof why, "quick_check: %s%s", rows ? first : "no answer",
             rows > 1 ? ", ..." : "");
    return o->host->setting_error(o->ctx, "path", SQB_DAMAGED_FMT, o->opts->path, why,
                                  o->opts->path, o->opts->path);
}

/* Steps 2 to 5 of the header comment on an open connection. */
static int setup(opener *o)
{
    header h;
    file_kind kind;
    int st = read_header(o, &h);
    if (st == TERN_OK)
        st = classify(o, &h, &kind);
    if (st == TERN_OK && kind == FILE_OURS)
        st = check_whole(o);
    if (st == TERN_OK)
        st = set_wal(o);
    if (st == TERN_OK &&
        exec_sql(o, o->opts->sync_full ? "PRAGMA synchronous = FULL"
                                       : "PRAGMA synchronous = NORMAL") != SQLITE_OK)
        st = open_failed(o, "setting PRAGMA synchronous");
    if (st != TERN_OK)
        return st;

    if (exec_sql(o, "BEGIN IMMEDIATE") != SQLITE_OK)
        return open_failed(o, "locking the file to check its schema");
    /* again: another process may have set it up (or migrated it) meanwhile */
    st = read_header(o, &h);
    if (st == TERN_OK)
        st = classify(o, &h, &kind);
    int migrated = 0;
    if (st == TERN_OK)
        st = kind == FILE_NEW ? create_schema(o) : check_schema(o, h.user_version);
    if (st == TERN_OK && kind == FILE_OURS && h.user_version == 1) {
        st = migrate_from_1(o);
        migrated = st == TERN_OK;
    }
    if (st == TERN_OK && exec_sql(o, "COMMIT") != SQLITE_OK)
        st = open_failed(o, migrated ? "committing the migration to schema 2"
                                     : "committing the schema");
    if (!sqlite3_get_autocommit(o->db))
        sqlite3_exec(o->db, "ROLLBACK", NULL, NULL, NULL);
    if (st == TERN_OK && migrated)
        o->host->log(o->ctx, TERN_LOG_INFO,
                     "sqlite: migrated '%s' from schema 1 to schema %d in place (column "
                     "'taken' and two indexes added; every record kept, in its order, "
                     "none handed out); tern before buffer ABI 1.6 cannot open it any more",
                     o->opts->path, SQB_SCHEMA_VERSION);
    return st;
}

int sqb_open(const tern_host *host, tern_ctx *ctx, const sqb_open_opts *opts, sqlite3 **db)
{
    *db = NULL;
    if (!sqlite3_threadsafe())
        return host->fail(ctx, TERN_EUNSUPPORTED,
                          "sqlite: the SQLite library (%s) was built without thread support "
                          "(SQLITE_THREADSAFE=0); install a thread-safe build",
                          sqlite3_libversion());
    opener o = {.host = host, .ctx = ctx, .opts = opts};
    int rc = sqlite3_open_v2(opts->path, &o.db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (!o.db)
        return host->fail(ctx, TERN_ENOMEM, "sqlite: out of memory opening '%s'", opts->path);
    sqlite3_extended_result_codes(o.db, 1);
    int st = TERN_OK;
    if (rc != SQLITE_OK) {
        note(&o, rc, sqlite3_errmsg(o.db));
        st = open_failed(&o, "opening the file");
    } else if (sqlite3_db_readonly(o.db, "main") == 1) {
        /* READWRITE falls back to read-only for a file we may not write */
        note(&o, SQLITE_READONLY, "the file is read-only for this process");
        st = open_failed(&o, "opening the file");
    } else {
        sqlite3_busy_timeout(o.db, opts->busy_timeout_ms);
        st = setup(&o);
    }
    if (st != TERN_OK) {
        sqlite3_close_v2(o.db);
        return st;
    }
    *db = o.db;
    return TERN_OK;
}
