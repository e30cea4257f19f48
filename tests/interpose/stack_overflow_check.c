/*
 * Run under the preload with ADSM_MALLOC_THRESHOLD below 64 MiB: a program
 * whose own SIGSEGV handler runs on its alternate stack (as Rust, Go, the
 * JVM and Python's faulthandler do, to report a stack overflow) still gets
 * its overflow, after the runtime's handler has taken faults on shared
 * memory, on this thread and on one with a small alternate stack of its own.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kBytes = 64 << 20, kAltBytes = 64 << 10 };
static unsigned char *g_shared;
static char g_alt[kAltBytes];

static void on_segv(int sig, siginfo_t *info, void *uctx) {
    (void)sig, (void)info, (void)uctx;
    char here;
    int on_alt = &here >= g_alt && &here < g_alt + kAltBytes;
    const char *m = on_alt ? "the stack overflow reached the program's handler on its alternate stack\n"
                           : "the program's handler ran, but not on its alternate stack\n";
    if (write(1, m, strlen(m)) < 0) _exit(2);
    _exit(on_alt ? 0 : 1);
}

/* Deeper until the stack runs out (the bound is never reached). */
static volatile int g_limit = 1 << 30;
static __attribute__((noinline)) int recurse(volatile char *p, int n) {
    volatile char buf[1024];
    buf[0] = (char)n;
    if (p) buf[1] = p[0];
    if (n >= g_limit) return buf[0];
    return recurse(buf, n + 1) + buf[2];
}

static void *touch_with_small_alt_stack(void *arg) {
    (void)arg;
    static char small[16384];
    stack_t ss = {.ss_sp = small, .ss_size = sizeof small};
    if (sigaltstack(&ss, NULL) != 0) return "sigaltstack";
    for (size_t i = 0; i < kBytes; i += 4096) g_shared[i] += 1;
    return NULL;
}

int main(void) {
    size_t (*shared_size)(const void *) = (size_t(*)(const void *))dlsym(RTLD_DEFAULT, "adsmGetSize");
    g_shared = malloc(kBytes);
    if (!g_shared || !shared_size || shared_size(g_shared) < kBytes) {
        fprintf(stderr, "FAILED: the buffer is not shared memory (run under the preload, threshold below 64 MiB)\n");
        return 1;
    }
    memset(g_shared, 1, kBytes);
    pthread_t t;
    void *failed = "thread";
    if (pthread_create(&t, NULL, touch_with_small_alt_stack, NULL) != 0 || pthread_join(t, &failed) != 0 || failed) {
        fprintf(stderr, "FAILED: %s\n", (const char *)failed);
        return 1;
    }
    for (size_t i = 0; i < kBytes; i += 4096)
        if (g_shared[i] != 2) {
            fprintf(stderr, "FAILED: byte %zu is %d\n", i, g_shared[i]);
            return 1;
        }
    stack_t ss = {.ss_sp = g_alt, .ss_size = kAltBytes};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    if (sigaltstack(&ss, NULL) != 0 || sigaction(SIGSEGV, &sa, NULL) != 0) return 1;
    return recurse(0, 0);
}
