/* A known program for the tool tests: it writes shared data to a file and
 * reads it back (interposed I/O), runs KERNELS kernels with a sync after
 * each, and reads the results on the CPU (faults, transfers back).  Its
 * counts are what the tests expect in the statistics and the trace. */
#include <adsm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KERNELS 3

static void add_one(const adsmThreadIdx *t, void **args) {
    float *v = *(float **)args[0];
    unsigned n = *(unsigned *)args[1];
    unsigned i = t->blockIdx.x * t->blockDim.x + t->threadIdx.x;
    if (i < n) v[i] += 1.0f;
}

/* TOOL_APP_CLOSE_STDERR=fclose|close: closes stderr on the way out, as
 * coreutils' close_stdout and mawk do. */
static void close_stderr_at_exit(void) {
    const char *how = getenv("TOOL_APP_CLOSE_STDERR");
    if (how && !strcmp(how, "fclose")) fclose(stderr);
    else if (how && !strcmp(how, "close")) close(2);
}

static double sum_on_cpu(const float *v, unsigned n) {
    double s = 0;
    for (unsigned i = 0; i < n; ++i) s += v[i]; /* the line the profile must name */
    return s;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: tool_app SCRATCH_FILE\n");
        return 2;
    }
    unsigned n = 1u << 20;
    float *v = adsmAlloc(n * sizeof(float));
    float *staged = adsmAlloc(n * sizeof(float));
    if (!v || !staged) return 1;
    /* (After the runtime started: its exit handlers run after this one.) */
    atexit(close_stderr_at_exit);
    for (unsigned i = 0; i < n; ++i) v[i] = (float)(i % 100);

    FILE *f = fopen(argv[1], "w+");
    if (!f || fwrite(v, sizeof(float), n, f) != n || fseek(f, 0, SEEK_SET) != 0 ||
        fread(staged, sizeof(float), n, f) != n) {
        perror("scratch file");
        return 1;
    }
    fclose(f);

    size_t sizes[] = {sizeof(float *), sizeof(unsigned)};
    adsmKernel_t k;
    if (adsmRegisterKernel("add_one", add_one, 2, sizes, &k) != adsmSuccess) return 1;
    void *args[] = {&staged, &n};
    adsmDim3 grid = {(n + 255) / 256, 1, 1}, block = {256, 1, 1};
    double total = 0;
    for (int round = 0; round < KERNELS; ++round) {
        if (adsmCall(k, grid, block, args) != adsmSuccess || adsmSync() != adsmSuccess) {
            fprintf(stderr, "kernel failed: %s\n", adsmGetLastErrorDetail());
            return 1;
        }
        total = sum_on_cpu(staged, n);
    }
    double expect = 0;
    for (unsigned i = 0; i < n; ++i) expect += (double)(i % 100) + KERNELS;
    printf("tool_app: sum %.0f, expected %.0f\n", total, expect);
    adsmFree(v);
    adsmFree(staged);
    return total == expect ? 0 : 1;
}
