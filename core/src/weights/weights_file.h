/* weights_file.h: a model's tensors (tensors() op) as one safetensors file,
 * the format of the checkpoint transport (transport_checkpoint.c):
 *
 *   bytes 0..8      N, the header length, unsigned 64-bit little-endian
 *   bytes 8..8+N    JSON: {"__metadata__": {"format": "pt",
 *                   "tern_weight_version": "V"}, "<name>": {"dtype": "F32",
 *                   "shape": [2, 3], "data_offsets": [begin, end]}, ...},
 *                   padded with spaces so that N is a multiple of 8
 *   bytes 8+N..     the tensors' bytes, in the model's order; data_offsets
 *                   are relative to the start of this section
 *
 * The writer is tern/support/safetensors_write.h (the one the model
 * plugins' checkpoints use too). Reading checks the whole header against
 * the receiving model (names, dtypes, shapes, offsets, file size) before a
 * byte is written into it. */
#ifndef TERN_LOOP_WEIGHTS_FILE_H
#define TERN_LOOP_WEIGHTS_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "tern/model.h"

/* Write the n tensors, tagged with `version`, to the open file `fd` from its
 * current position. `path` names the file in messages. TERN_OK, TERN_EINVAL
 * (a tensor the format cannot hold: bad dtype, size not matching the shape,
 * duplicate or empty name), TERN_ENOMEM or TERN_EIO, with a message. */
int tern_weights_file_write(int fd, const char *path, const tern_tensor *t, size_t n,
                            int64_t version);

/* Read the file at `path` into the n tensors' buffers, after checking that it
 * holds exactly these tensors (same names, dtypes and shapes) and, when
 * `version` >= 0, that its metadata names that version. TERN_OK;
 * TERN_ENOTFOUND if there is no such file; TERN_EINVAL for a corrupt file or
 * one that does not fit the model; TERN_EIO for a read error (the model may
 * then be partly written); TERN_ENOMEM. Every message names the file. */
int tern_weights_file_read(const char *path, const tern_tensor *t, size_t n, int64_t version);

#endif
