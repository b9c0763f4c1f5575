/* test_regular_file.c: tern/support/regular_file.h, reading only regular
 * files of a bounded size, never blocking on a FIFO. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tern/support/regular_file.h"

/* A fresh directory of this test's own under the work directory. */
static const char *own_dir(void)
{
    static char dir[512];
    snprintf(dir, sizeof dir, "%s/regular_XXXXXX", TERN_TEST_WORK_DIR);
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

Test(regular_file, reads_a_file_whole_and_nul_terminated)
{
    const char *dir = own_dir();
    char path[600];
    snprintf(path, sizeof path, "%s/a.txt", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fwrite("ab\0cd", 1, 5, f);
    fclose(f);
    char *buf, why[TERN_REGULAR_WHY_MAX];
    size_t n;
    cr_assert_eq(tern_regular_read(path, 5, &buf, &n, why, sizeof why), 0, "%s", why);
    cr_expect_eq(n, 5);
    cr_expect(memcmp(buf, "ab\0cd", 6) == 0);
    free(buf);
    cr_expect_eq(tern_regular_read(path, 4, &buf, &n, why, sizeof why), -1);
    cr_expect_eq(errno, EFBIG);
    cr_expect_str_eq(why, "too big: 5 bytes, over the limit of 4 (4 bytes)");
    cr_expect_null(buf);
    FILE *s = tern_regular_fopen(path, 0, why, sizeof why);
    cr_assert_not_null(s, "%s", why);
    cr_expect_eq(fgetc(s), 'a');
    fclose(s);
    unlink(path);
    rmdir(dir);
}

Test(regular_file, a_file_without_a_size_is_held_to_the_limit_while_read)
{
    /* /proc files say size 0 and hold more: read to the end, or refused */
    char *buf, why[TERN_REGULAR_WHY_MAX];
    size_t n;
    cr_assert_eq(tern_regular_read("/proc/self/maps", 0, &buf, &n, why, sizeof why), 0, "%s",
                 why);
    cr_expect_gt(n, 100);
    cr_expect_eq(strlen(buf), n);
    free(buf);
    cr_expect_eq(tern_regular_read("/proc/self/maps", 64, &buf, &n, why, sizeof why), -1);
    cr_expect_eq(errno, EFBIG);
    cr_expect_str_eq(why, "too big: over the limit of 64 bytes (64 bytes)");
}

Test(regular_file, fifo_device_socket_and_directory_are_refused_without_blocking)
{
    alarm(20); /* an open or read that blocks on the FIFO ends the test here */
    const char *dir = own_dir();
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/f", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    char *buf, why[TERN_REGULAR_WHY_MAX];
    size_t n;
    cr_expect_eq(tern_regular_read(fifo, 0, &buf, &n, why, sizeof why), -1);
    cr_expect_eq(errno, EINVAL);
    cr_expect_str_eq(why, "not a regular file but a FIFO (named pipe)");
    cr_expect_eq(tern_regular_open(fifo, 0, NULL, why, sizeof why), -1);
    cr_expect_null(tern_regular_fopen("/dev/zero", 0, why, sizeof why));
    cr_expect_str_eq(why, "not a regular file but a character device");
    cr_expect_eq(tern_regular_read(dir, 0, &buf, &n, why, sizeof why), -1);
    cr_expect_eq(errno, EISDIR);
    cr_expect_str_eq(why, "Is a directory");
    char missing[600];
    snprintf(missing, sizeof missing, "%s/none", dir);
    cr_expect_eq(tern_regular_open(missing, 0, NULL, why, sizeof why), -1);
    cr_expect_eq(errno, ENOENT);
    cr_expect_str_eq(why, "No such file or directory");
    /* NULL, 0: no reason wanted */
    cr_expect_eq(tern_regular_open(fifo, 0, NULL, NULL, 0), -1);
    unlink(fifo);
    rmdir(dir);
}

Test(regular_file, limits_read_as_people_write_them)
{
    char b[32];
    cr_expect_str_eq(tern_regular_size_text(16ull << 20, b, sizeof b), "16 MiB");
    cr_expect_str_eq(tern_regular_size_text(2ull << 30, b, sizeof b), "2 GiB");
    cr_expect_str_eq(tern_regular_size_text(1u << 10, b, sizeof b), "1 KiB");
    cr_expect_str_eq(tern_regular_size_text(1500, b, sizeof b), "1500 bytes");
}
