/*
 * Run under the preload with ADSM_STATS=1: a program that never uses the
 * runtime's API (so can launch no kernel) writes 32 MiB of shared memory
 * with the CPU, which rolling's window of dirty blocks would send ahead,
 * and reads a 16 MiB file into fresh shared memory, which a protocol would
 * store for the device alone or on both sides, then reads all of it back.
 * Nothing should cross to the device, nor come back from it: the test
 * matches the data's check, then the statistics' zero byte counts.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kWritten = 32 << 20, kRead = 16 << 20, kChunk = 64 << 10 };

static uint64_t sum(const unsigned char *p, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; ++i) s = s * 31 + p[i];
    return s;
}

int main(void) {
    unsigned char *written = malloc(kWritten), *fresh = malloc(kRead);
    static unsigned char chunk[kChunk];
    if (!written || !fresh) return 2;
    for (size_t i = 0; i < kWritten; ++i) written[i] = (unsigned char)(i * 7 + i / 4096);

    char path[] = "/tmp/adsm-no-kernel-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 2;
    unlink(path);
    uint64_t expected = 0;
    for (size_t done = 0; done < kRead; done += kChunk) {
        for (size_t i = 0; i < kChunk; ++i) chunk[i] = (unsigned char)((done + i) * 13 + (done + i) / 65536);
        expected += sum(chunk, kChunk);
        if (write(fd, chunk, kChunk) != kChunk) return 2;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) return 2;
    for (size_t done = 0; done < kRead;) {
        ssize_t r = read(fd, fresh + done, kRead - done);
        if (r <= 0) return 2;
        done += (size_t)r;
    }
    close(fd);

    uint64_t got = 0;
    for (size_t done = 0; done < kRead; done += kChunk) got += sum(fresh + done, kChunk);
    uint64_t w = 0;
    for (size_t i = 0; i < kWritten; ++i) w += written[i] == (unsigned char)(i * 7 + i / 4096);
    /* (On stderr, as the statistics after it, so the two keep their order.) */
    fprintf(stderr, "read back %s, written back %s\n", got == expected ? "identical" : "DIFFERENT",
           w == kWritten ? "identical" : "DIFFERENT");
    free(written);
    free(fresh);
    return got == expected && w == kWritten ? 0 : 1;
}
