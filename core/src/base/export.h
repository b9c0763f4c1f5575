/* export.h: TERN_INTERNAL marks the few libtern functions that the command
 * layer (cli/, the `tern` program) calls besides tern/libtern.h: errors, the
 * logger, sessions, reward routing, tasks, the model proxy. libtern.so
 * exports them so the command can link the shared library, but their
 * headers are not installed: they are not part of the SDK or the embedding
 * API and may change in any release. Everything else in libtern is hidden. */
#ifndef TERN_BASE_EXPORT_H
#define TERN_BASE_EXPORT_H

#if defined(__GNUC__)
#define TERN_INTERNAL __attribute__((visibility("default")))
#else
#define TERN_INTERNAL
#endif

#endif
