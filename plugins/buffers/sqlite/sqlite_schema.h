/*
 * sqlite_schema.h: opening a `sqlite` buffer file (schema.c): the connection
 * settings, the check that the file is a tern buffer this tern can read, and
 * the creation of the schema in a new file. The ops live in sqlite.c.
 */
#ifndef TERN_SQLITE_SCHEMA_H
#define TERN_SQLITE_SCHEMA_H

#include <sqlite3.h>

#include <tern/host.h>

/* PRAGMA application_id of every tern buffer file: "tern" in ASCII. */
#define SQB_APPLICATION_ID 0x7465726e
/* PRAGMA user_version: the schema this code writes and reads. Version 1
 * (tern before buffer ABI 1.6: no `taken` column, records deleted by get) is
 * migrated to it in place when opened (schema.c). */
#define SQB_SCHEMA_VERSION 2

/* The message for a damaged file, with its path three times and the reason
 * (SQLite's words) once: what, where, and how to get going again. */
#define SQB_DAMAGED_FMT                                                                     \
    "'%s' is damaged (%s): its records cannot be read; nothing else is lost (a run's "      \
    "checkpoints, metrics and log do not depend on it): move it away, with '%s-wal' and "   \
    "'%s-shm' if they are there, and start again with a new file"

/* How the connection is set up (from the plugin's settings). */
typedef struct sqb_open_opts {
    const char *path;    /* the database file, relative to the working directory */
    int sync_full;       /* PRAGMA synchronous: 1 = FULL, 0 = NORMAL */
    int busy_timeout_ms; /* sqlite3_busy_timeout */
} sqb_open_opts;

/* Open (creating it if absent) the buffer file, switch it to WAL mode, check
 * or create its schema, migrating a schema-1 file to SQB_SCHEMA_VERSION (logged
 * at info level through host->log). Returns TERN_OK with *db set, or a status after
 * host->fail / host->setting_error with a message naming the path; *db is then
 * NULL and nothing is left open. */
int sqb_open(const tern_host *host, tern_ctx *ctx, const sqb_open_opts *opts, sqlite3 **db);

/* The tern status for an SQLite result code (TERN_ENOMEM, TERN_ETIMEDOUT for
 * a lock held longer than busy_timeout_ms, TERN_EINVAL for a too-big record,
 * TERN_EIO otherwise). */
int sqb_status_of(int sqlite_rc);

#endif
