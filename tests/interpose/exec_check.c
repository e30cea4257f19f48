/*
 * Run under the preload with ADSM_MALLOC_THRESHOLD=4K and
 * ADSM_CHAOS_RELEASE_EVERY=1: the program puts the path, the arguments and
 * the environment of an exec (both arrays and every string) in shared
 * memory, closes its blocks (a write of it forces a release and an
 * acquire in chaos mode), and execs itself from them, with execve or, given
 * --list, with execle (the strings' addresses as its arguments).  The new image prints what it was given; the kernel
 * alone would fail the exec with EFAULT.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *put(char **at, const char *s) {
    char *p = *at;
    strcpy(p, s);
    *at += strlen(s) + 1;
    return p;
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--child") == 0) {
        const char *env = getenv("ADSM_EXEC_CHECK");
        printf("exec'd with %s and %s\n", argv[2], env ? env : "no environment");
        return 0;
    }
    const int list = argc > 1 && strcmp(argv[1], "--list") == 0;
    /* The strings in one shared object, the arrays in another: the program
     * keeps the strings' addresses and never reads them again (a read would
     * open their block), and the call alone reads the arrays. */
    enum { kText = 64 << 10, kArrays = 8 << 10 };
    char *text = malloc(kText), *at = text;
    char **args = malloc(kArrays), **envp = args + 4;
    if (!text || !args) return 2;
    char *path = put(&at, "/proc/self/exe");
    char *a0 = put(&at, "exec_check"), *a1 = put(&at, "--child"), *a2 = put(&at, "an-argument-in-shared-memory");
    char *e0 = put(&at, "ADSM_EXEC_CHECK=an-environment-in-shared-memory");
    args[0] = a0, args[1] = a1, args[2] = a2, args[3] = NULL;
    envp[0] = e0, envp[1] = NULL;
    int fd = open("/dev/null", O_WRONLY);
    if (fd < 0 || write(fd, text, kText) != kText) return 2; /* closes every block */
    close(fd);
    fflush(stdout);
    if (list)
        execle(path, a0, a1, a2, (char *)NULL, envp);
    else
        execve(path, args, envp);
    perror("exec_check: exec");
    return 1;
}
