/*
 * cuda_check.h: turning CUDA and cuBLAS statuses into tern's error style (a
 * message and -1), never an exit. Each check names the call that failed,
 * the status and the device, so "out of memory" or "no kernel image for
 * this GPU" reaches the user as such.
 */
#ifndef TERN_CUDA_CHECK_H
#define TERN_CUDA_CHECK_H

#include <stdio.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

/* The text of a cuBLAS status. */
const char *cuda_blas_status(cublasStatus_t s);

/* In a function with `char *err, size_t errn` and a cuda_model *m in scope:
 * on failure write the message and return -1. The CUDA variant clears the
 * sticky last error so the next call starts clean. */
#define CU_TRY(call)                                                                             \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess) {                                                               \
            (void)cudaGetLastError();                                                          \
            snprintf(err, errn, "%s on %s: %s (%s)", #call, m->where, cudaGetErrorString(e_),   \
                     cudaGetErrorName(e_));                                                    \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

#define BLAS_TRY(call)                                                                           \
    do {                                                                                       \
        cublasStatus_t s_ = (call);                                                            \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                     \
            snprintf(err, errn, "cuBLAS %s on %s: %s", #call, m->where, cuda_blas_status(s_));  \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

#endif
