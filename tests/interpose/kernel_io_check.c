/*
 * Run under the preload: a program that never uses the runtime's API hands
 * malloc'd buffers (shared at the 1 MiB threshold) to I/O that the C
 * library does inside itself or that the program makes by number, where
 * the kernel itself reads or writes the buffer: POSIX asynchronous I/O (the
 * C library's helper threads make the calls), a stream's buffer given with
 * setvbuf (the C library fills and drains it), and syscall(SYS_pread64),
 * syscall(SYS_getrandom) and Linux's native asynchronous I/O by number.  Under a tracker that protects what the CPU has
 * not written, or in chaos mode, the kernel found those pages closed and
 * failed with EFAULT.  Prints "kernel I/O identical" when every byte is
 * what the file holds.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { kBytes = 4 << 20 };

static unsigned char file_byte(size_t i) { return (unsigned char)(i * 13 + i / 4096); }

static int check(const char *what, const unsigned char *p, size_t n, size_t from) {
    for (size_t i = 0; i < n; ++i)
        if (p[i] != file_byte(from + i)) {
            printf("%s: DIFFERENT at byte %zu\n", what, i);
            return 1;
        }
    return 0;
}

int main(void) {
    char path[] = "/tmp/adsm-kernel-io-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 2;
    unlink(path);
    static unsigned char chunk[1 << 16];
    for (size_t done = 0; done < 2 * (size_t)kBytes; done += sizeof chunk) {
        for (size_t i = 0; i < sizeof chunk; ++i) chunk[i] = file_byte(done + i);
        if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) return 2;
    }
    int bad = 0;

    /* Asynchronous I/O: a read, then a write of what it read, then a list. */
    unsigned char *a = malloc(kBytes), *b = malloc(kBytes);
    if (!a || !b) return 2;
    struct aiocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_fildes = fd;
    cb.aio_buf = a;
    cb.aio_nbytes = kBytes;
    cb.aio_offset = 4096;
    const struct aiocb *list[1] = {&cb};
    if (aio_read(&cb) != 0) return printf("aio_read: %s\n", strerror(errno)), 1;
    while (aio_error(&cb) == EINPROGRESS) aio_suspend(list, 1, NULL);
    if (aio_return(&cb) != kBytes) bad = printf("aio_read: %s (DIFFERENT)\n", strerror(aio_error(&cb)));
    else bad |= check("aio_read", a, kBytes, 4096);
    FILE *out = tmpfile();
    cb.aio_fildes = fileno(out);
    cb.aio_offset = 0;
    if (aio_write(&cb) != 0) return printf("aio_write: %s\n", strerror(errno)), 1;
    while (aio_error(&cb) == EINPROGRESS) aio_suspend(list, 1, NULL);
    if (aio_return(&cb) != kBytes) bad = printf("aio_write: %s (DIFFERENT)\n", strerror(aio_error(&cb)));
    else if (pread(fileno(out), b, kBytes, 0) != kBytes) return 2;
    else bad |= check("aio_write", b, kBytes, 4096);
    fclose(out);
    unsigned char *c = malloc(kBytes), *d = malloc(kBytes);
    if (!c || !d) return 2;
    struct aiocb lc, ld;
    memset(&lc, 0, sizeof lc);
    lc.aio_fildes = ld.aio_fildes = fd;
    lc.aio_lio_opcode = LIO_READ;
    lc.aio_nbytes = kBytes;
    ld = lc;
    lc.aio_buf = c;
    ld.aio_buf = d;
    ld.aio_offset = kBytes;
    struct aiocb *both[2] = {&lc, &ld};
    if (lio_listio(LIO_WAIT, both, 2, NULL) != 0) bad = printf("lio_listio: %s (DIFFERENT)\n", strerror(errno));
    else bad |= check("lio_listio", c, kBytes, 0) | check("lio_listio", d, kBytes, kBytes);

    /* A stream's buffer of the program's. */
    unsigned char *vb = malloc(kBytes), *line = malloc(kBytes + 1);
    if (!vb || !line) return 2;
    FILE *in = fdopen(dup(fd), "r");
    if (!in || setvbuf(in, (char *)vb, _IOFBF, kBytes) != 0 || fseek(in, 0, SEEK_SET) != 0) return 2;
    size_t got = 0;
    for (int ch; got < kBytes && (ch = fgetc(in)) != EOF;) line[got++] = (unsigned char)ch;
    if (got != kBytes) bad = printf("setvbuf: %zu bytes read (DIFFERENT)\n", got);
    else bad |= check("setvbuf", line, kBytes, 0);
    fclose(in);

    /* System calls by number. */
    unsigned char *e = malloc(kBytes);
    if (!e) return 2;
    long r = syscall(SYS_pread64, fd, e, kBytes, 100);
    if (r != kBytes) bad = printf("syscall(SYS_pread64): %ld %s (DIFFERENT)\n", r, strerror(errno));
    else bad |= check("syscall(SYS_pread64)", e, kBytes, 100);
    unsigned char *f = malloc(kBytes);
    if (!f) return 2;
    r = syscall(SYS_getrandom, f, 4096, 0);
    if (r != 4096) bad = printf("syscall(SYS_getrandom): %ld %s (DIFFERENT)\n", r, strerror(errno));

    /* Linux's native asynchronous I/O, by number as libaio makes it. */
    unsigned char *g = malloc(kBytes);
    if (!g) return 2;
    aio_context_t ctx = 0;
    if (syscall(SYS_io_setup, 4, &ctx) != 0) return 2;
    struct iocb native;
    memset(&native, 0, sizeof native);
    native.aio_lio_opcode = IOCB_CMD_PREAD;
    native.aio_fildes = (unsigned)fd;
    native.aio_buf = (unsigned long)g;
    native.aio_nbytes = kBytes;
    native.aio_offset = 12345;
    struct iocb *one[1] = {&native};
    struct io_event ev;
    if (syscall(SYS_io_submit, ctx, 1, one) != 1 || syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1)
        return printf("io_submit: %s\n", strerror(errno)), 1;
    if (ev.res != kBytes) bad = printf("io_submit: %lld (DIFFERENT)\n", (long long)ev.res);
    else bad |= check("io_submit", g, kBytes, 12345);
    syscall(SYS_io_destroy, ctx);

    if (bad) return 1;
    printf("kernel I/O identical\n");
    free(a), free(b), free(c), free(d), free(vb), free(line), free(e), free(f), free(g);
    return 0;
}
