/* wire.h: the roles' messages (messages.h) as bytes, for sending them
 * between MPI ranks (docs/distributed.md). In one process the queues carry
 * the structs themselves; across ranks a message is encoded by its sender
 * and decoded by its receiver, which may be another build on another
 * machine, so the format is fixed here and the decoder trusts nothing.
 *
 * Format 3, all integers little-endian and fixed-width:
 *   header   "TRNW", u16 format (3), u16 kind (a tern_msg_kind)
 *   then the fields of the kind's struct in a fixed order (wire.c), with
 *   doubles and floats as their IEEE bits (u64, u32: they round-trip bit for
 *   bit, NaNs too), strings as u8 tag (0: NULL, 1: text) + u32 length + the
 *   bytes (no NUL), jansson values as their compact JSON text (a string),
 *   and arrays as a count followed by the entries.
 * A message is exactly its bytes: nothing may follow it. */
#ifndef TERN_CHANNEL_WIRE_H
#define TERN_CHANNEL_WIRE_H

#include <stddef.h>

#define TERN_WIRE_MAGIC "TRNW"
#define TERN_WIRE_FORMAT 7u /* 3: tasks' images (issue 27); 4: trajectories (issue 57);
                               5: tool call counts; 6: workflow call counts;
                               7: a trajectory's restarts */

/* Encode any role message (by its kind) into a new malloc'd buffer of *len
 * bytes. TERN_OK; TERN_ENOMEM; TERN_EINVAL with a message for an unknown
 * kind or a message the decoder would refuse (a NULL prompt, answer or
 * response text, a NULL array of a nonzero count, a string of 4 GiB or
 * more, an unknown role, figures that are not a JSON object or groups not
 * an array, a tensor of more than 4 dimensions).
 * On failure *buf is NULL and *len 0. */
int tern_wire_encode(const void *msg, unsigned char **buf, size_t *len);

/* Decode bytes made by tern_wire_encode into a new message (free it with
 * tern_msg_free). Malformed or truncated input (any byte string at all)
 * gives TERN_EINVAL with a message saying what is wrong, and nothing is
 * allocated beyond a small multiple of `len`; TERN_ENOMEM if memory runs
 * out. On failure *msg is NULL. */
int tern_wire_decode(const unsigned char *buf, size_t len, void **msg);

#endif
