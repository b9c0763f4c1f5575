/* bench_weights_bcast.c: how long the `mpi` weight transport takes to move
 * one weight version of a given size from the trainer rank to the explorer
 * ranks, beside what one process does for the same bytes (the `memory`
 * transport: a copy into the published snapshot, a copy out into the
 * explorer's model). Run it under mpirun with 3 or more ranks:
 *
 *   mpirun -np 3 build/bench/bench_weights_bcast [MiB ...]
 *
 * Rank 1 is the root, as the trainer rank is in a run; every rank but 0
 * takes part, as in a run's weights group. Each size is sent 5 times after
 * one warm-up; the median is printed. First, the CPU a rank uses while it
 * waits 3 s for a message (its post office polling): a blocking MPI_Recv
 * would use a whole core. Last, what data-parallel trainer ranks pay per
 * step: the sum of float32 gradients of each size between ranks 1 and 2
 * (tern_link_trainers_sum, MPI_Iallreduce polled). Figures only, no
 * pass/fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "channel/link.h"

#ifdef TERN_HAVE_MPI
#include <mpi.h>

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

static double median5(double *v)
{
    qsort(v, 5, sizeof *v, cmp);
    return v[2];
}

int main(int argc, char **argv)
{
    tern_link *l = tern_link_open();
    if (!l) {
        fprintf(stderr, "bench_weights_bcast: cannot start MPI\n");
        return 1;
    }
    int rank = tern_link_rank(l), size = tern_link_size(l);
    if (size < 3) {
        if (rank == 0)
            fprintf(stderr, "bench_weights_bcast: run it with mpirun -np 3 or more\n");
        tern_link_close(l);
        return 2;
    }
    /* a rank waiting for a message that comes 3 s later */
    {
        struct rusage r0, r1;
        getrusage(RUSAGE_SELF, &r0);
        double t0 = now();
        void *msg = NULL;
        size_t len = 0;
        if (rank == 0) {
            struct timespec ts = {3, 0};
            nanosleep(&ts, NULL);
            for (int r = 1; r < size; r++)
                tern_link_send(l, r, TERN_TAG_CONTROL, "go", 2);
        } else {
            tern_link_recv(l, TERN_TAG_CONTROL, -1, &msg, &len, NULL);
            free(msg);
        }
        double wall = now() - t0;
        getrusage(RUSAGE_SELF, &r1);
        double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                     1e-6 * (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) +
                     (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                     1e-6 * (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
        double worst = 0, mine = cpu / wall;
        MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("a rank waiting 3 s for a message: %.1f%% of a core (the most of %d ranks; "
                   "the whole process: its post office polls every 1 ms)\n\n",
                   100 * worst, size - 1);
    }
    static const double def[] = {1, 16, 64, 256};
    size_t n = argc > 1 ? (size_t)(argc - 1) : sizeof def / sizeof def[0];
    int member = rank != 0;
    if (tern_link_weights_group(l, member, 1) != 0) {
        tern_link_close(l);
        return 1;
    }
    if (rank == 0)
        printf("weights broadcast, trainer rank -> %d explorer rank(s), one host, median of 5\n"
               "%10s %14s %12s %14s %12s %8s\n",
               size - 2, "MiB", "mpi ms", "mpi GB/s", "memory ms", "memory GB/s", "ratio");
    for (size_t i = 0; i < n; i++) {
        double mib = argc > 1 ? atof(argv[i + 1]) : def[i];
        size_t bytes = (size_t)(mib * 1048576.0);
        unsigned char *buf = malloc(bytes ? bytes : 1), *to = malloc(bytes ? bytes : 1);
        if (!buf || !to)
            return 1;
        memset(buf, rank, bytes);
        double mpi_s[5] = {0}, mem_s[5] = {0};
        for (int k = -1; k < 5; k++) {
            /* everyone starts together: the time is the broadcast's alone */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now();
            if (member)
                tern_link_bcast(l, buf, bytes, NULL);
            double t = now() - t0, slowest = 0;
            MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0 && k >= 0) {
                mpi_s[k] = slowest;
                /* one process: publish copies in, load copies out */
                t0 = now();
                memcpy(to, buf, bytes);
                memcpy(buf, to, bytes);
                mem_s[k] = now() - t0;
            }
        }
        if (rank == 0) {
            double a = median5(mpi_s), b = median5(mem_s);
            printf("%10.0f %14.2f %12.2f %14.2f %12.2f %8.2f\n", mib, 1e3 * a,
                   (double)bytes / a / 1e9, 1e3 * b, (double)bytes / b / 1e9, a / b);
        }
        free(buf);
        free(to);
    }
    /* the gradient sum of two trainer ranks */
    int trainer = rank == 1 || rank == 2;
    if (tern_link_trainers_group(l, trainer) != 0) {
        tern_link_close(l);
        return 1;
    }
    if (rank == 0)
        printf("\ngradient sum (float32, in place) between 2 trainer ranks, median of 5\n"
               "%10s %14s %12s\n", "MiB", "sum ms", "GB/s");
    for (size_t i = 0; i < n; i++) {
        double mib = argc > 1 ? atof(argv[i + 1]) : def[i];
        size_t count = (size_t)(mib * 1048576.0) / sizeof(float);
        float *g = malloc((count ? count : 1) * sizeof *g);
        if (!g)
            return 1;
        for (size_t k = 0; k < count; k++)
            g[k] = (float)rank;
        double sum_s[5] = {0};
        for (int k = -1; k < 5; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now();
            if (trainer)
                tern_link_trainers_sum(l, g, count, NULL);
            double t = now() - t0, slowest = 0;
            MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            if (rank == 0 && k >= 0)
                sum_s[k] = slowest;
        }
        if (rank == 0) {
            double a = median5(sum_s);
            printf("%10.0f %14.2f %12.2f\n", mib, 1e3 * a, (double)count * 4 / a / 1e9);
        }
        free(g);
    }
    tern_link_close(l);
    return 0;
}

#else

int main(void)
{
    fprintf(stderr, "bench_weights_bcast: this tern was built without MPI\n");
    return 2;
}

#endif
