/*
 * bench_transports.c: one weight version of a given size moved from the
 * trainer's GPU to an explorer's GPU, by each way tern has:
 *
 *   memory      device -> host copy (the trainer's tensors() pull), then
 *               host -> device (the explorer's push): one process
 *   checkpoint  device -> host, a safetensors-sized file written and
 *               fsync'd, read back, host -> device (the `checkpoint`
 *               transport's path through a shared file system)
 *   nccl        the `nccl` transport plugin's broadcast: the flat device
 *               buffer in buckets of 64 MiB (ncclBroadcast), rank 0 to
 *               every other rank, each on its own GPU
 *   nccl sum    the data-parallel trainers' gradient sum of the same bytes
 *               (ncclAllReduce, float32)
 *
 * Run it under mpirun with one rank per GPU (2 or more ranks for NCCL):
 *
 *   mpirun -np 2 build/bench/bench_transports [MiB ...]
 *
 * Rank r uses GPU (local rank mod GPUs). With fewer GPUs than ranks NCCL
 * cannot run (it refuses two ranks on one GPU): the NCCL rows say so and the
 * others are measured on rank 0. Each figure is the median of 5 after one
 * warm-up. Figures only, no pass/fail; without a GPU it exits 77.
 */
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPS 5
#define BUCKET ((size_t)64 << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, cmp);
    return t[n / 2];
}

#define CK(x)                                                                                   \
    do {                                                                                        \
        if ((x) != 0) {                                                                         \
            fprintf(stderr, "bench_transports: %s failed at line %d\n", #x, __LINE__);          \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                       \
        }                                                                                       \
    } while (0)

/* memory: device -> host -> device through pageable memory, as the front's
 * pull and push do. */
static double memory_path(void *dev, void *dev2, void *host, size_t bytes)
{
    double t0 = now();
    CK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(dev2, host, bytes, cudaMemcpyHostToDevice));
    return now() - t0;
}

/* checkpoint: device -> host, write + fsync, read, host -> device. */
static double checkpoint_path(void *dev, void *dev2, void *host, size_t bytes, const char *path)
{
    double t0 = now();
    CK(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost));
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CK(fd < 0);
    for (size_t at = 0; at < bytes;) {
        ssize_t w = write(fd, (char *)host + at, bytes - at);
        CK(w <= 0);
        at += (size_t)w;
    }
    CK(fsync(fd));
    close(fd);
    fd = open(path, O_RDONLY);
    CK(fd < 0);
    for (size_t at = 0; at < bytes;) {
        ssize_t r = read(fd, (char *)host + at, bytes - at);
        CK(r <= 0);
        at += (size_t)r;
    }
    close(fd);
    CK(cudaMemcpy(dev2, host, bytes, cudaMemcpyHostToDevice));
    return now() - t0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, gpus = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
        if (rank == 0)
            printf("bench_transports: no GPU: nothing to measure\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Comm local;
    int local_rank = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    CK(cudaSetDevice(local_rank % gpus));
    /* every rank its own GPU, across the job */
    int shared = size > gpus, any_shared = 0;
    MPI_Allreduce(&shared, &any_shared, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    int nccl_ok = size >= 2 && !any_shared;

    size_t mib_list[16] = {32, 512, 2048};
    int n_sizes = 3;
    if (argc > 1) {
        n_sizes = 0;
        for (int i = 1; i < argc && n_sizes < 16; i++)
            mib_list[n_sizes++] = strtoull(argv[i], NULL, 10);
    }
    if (rank == 0) {
        struct cudaDeviceProp p;
        CK(cudaGetDeviceProperties(&p, local_rank % gpus));
        printf("bench_transports: %d ranks, %d GPU%s per node (%s)\n", size, gpus,
               gpus == 1 ? "" : "s", p.name);
        if (!nccl_ok)
            printf("nccl: not measured: %s\n",
                   size < 2 ? "run 2 or more ranks (mpirun -np 2)"
                            : "fewer GPUs than ranks, and NCCL needs one GPU per rank");
        printf("%10s %14s %16s %14s %14s\n", "MiB", "memory ms", "checkpoint ms", "nccl ms",
               "nccl sum ms");
    }
    ncclComm_t comm = NULL;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    if (nccl_ok) {
        ncclUniqueId id;
        if (rank == 0)
            CK(ncclGetUniqueId(&id));
        MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
        CK(ncclCommInitRank(&comm, size, id, rank));
    }
    char path[] = "/tmp/tern-bench-transportsXXXXXX";
    int tmp = mkstemp(path);
    CK(tmp < 0);
    close(tmp);
    for (int si = 0; si < n_sizes; si++) {
        const size_t bytes = mib_list[si] << 20;
        void *dev, *dev2, *host = NULL;
        CK(cudaMalloc(&dev, bytes));
        CK(cudaMalloc(&dev2, bytes));
        CK(cudaMemset(dev, 0, bytes));
        double mem = 0, ckpt = 0, bc = 0, sum = 0, t[REPS];
        if (rank == 0) {
            host = malloc(bytes);
            CK(!host);
            for (int r = 0; r <= REPS; r++) {
                double x = memory_path(dev, dev2, host, bytes);
                if (r)
                    t[r - 1] = x;
            }
            mem = median(t, REPS);
            for (int r = 0; r <= REPS; r++) {
                double x = checkpoint_path(dev, dev2, host, bytes, path);
                if (r)
                    t[r - 1] = x;
            }
            ckpt = median(t, REPS);
            free(host);
        }
        if (nccl_ok) {
            for (int r = 0; r <= REPS; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = now();
                for (size_t at = 0; at < bytes; at += BUCKET) {
                    size_t n = bytes - at < BUCKET ? bytes - at : BUCKET;
                    CK(ncclBroadcast((char *)dev + at, (char *)dev + at, n, ncclUint8, 0, comm,
                                     st));
                }
                CK(cudaStreamSynchronize(st));
                double x = now() - t0, worst;
                MPI_Allreduce(&x, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (r)
                    t[r - 1] = worst;
            }
            bc = median(t, REPS);
            for (int r = 0; r <= REPS; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = now();
                CK(ncclAllReduce(dev, dev, bytes / sizeof(float), ncclFloat, ncclSum, comm, st));
                CK(cudaStreamSynchronize(st));
                double x = now() - t0, worst;
                MPI_Allreduce(&x, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (r)
                    t[r - 1] = worst;
            }
            sum = median(t, REPS);
        }
        if (rank == 0) {
            char b1[32] = "-", b2[32] = "-";
            if (nccl_ok) {
                snprintf(b1, sizeof b1, "%.2f", 1e3 * bc);
                snprintf(b2, sizeof b2, "%.2f", 1e3 * sum);
            }
            printf("%10zu %14.2f %16.2f %14s %14s\n", mib_list[si], 1e3 * mem, 1e3 * ckpt, b1, b2);
        }
        cudaFree(dev);
        cudaFree(dev2);
    }
    unlink(path);
    if (comm)
        ncclCommDestroy(comm);
    cudaStreamDestroy(st);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
