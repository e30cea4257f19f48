/* A program that closes every descriptor it did not open at its start (as
 * ssh, daemons and test harnesses do: closefrom, close_range or close in a
 * loop), then numbers its own files itself (dup2 onto 3 to 9, as a shell's
 * redirections do), run under the preload with its heap shared.  The
 * runtime's descriptors were among those closed and replaced: a fork child
 * then read its objects from one of the program's files.  Prints
 * "descriptors kept apart" when the child finds the parent's data, the
 * parent keeps its own, and every file holds what the program wrote. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int check(int how) {
    const size_t n = 8u << 20;
    unsigned char *p = malloc(n); /* shared at the threshold the check sets */
    if (!p) return perror("malloc"), 1;
    memset(p, 1, n);
    if (how == 0) closefrom(3);
    else if (how == 1) close_range(3, ~0U, 0);
    else
        for (int fd = 3; fd < 1024; ++fd) close(fd);
    char path[64];
    snprintf(path, sizeof path, "/tmp/adsm-descriptors-%d", (int)getpid());
    for (int fd = 3; fd <= 9; ++fd) {
        int f = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (f < 0) return perror("open"), 1;
        if (f != fd && (dup2(f, fd) != fd || close(f) != 0)) return perror("dup2"), 1;
    }
    unlink(path);
    if (write(9, "program data", 12) != 12) return perror("write"), 1;
    unsigned char *q = malloc(n);
    memset(q, 2, n);
    pid_t pid = fork();
    if (pid == 0) {
        size_t wrong = 0;
        for (size_t i = 0; i < n; i += 4096) wrong += (p[i] != 1) + (q[i] != 2);
        memset(q, 3, n);
        _exit(wrong ? 1 : 0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return perror("fork"), 1;
    char back[16] = {0};
    ssize_t got = pread(3, back, 12, 0);
    int bad = !WIFEXITED(st) || WEXITSTATUS(st) != 0 || q[n / 2] != 2 || got != 12 || strcmp(back, "program data");
    printf("%s: child %s, parent's data %s, file holds '%s'\n", how == 0 ? "closefrom" : how == 1 ? "close_range" : "close",
           WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "found its data" : "DID NOT find its data",
           q[n / 2] == 2 ? "kept" : "CHANGED", back);
    for (int fd = 3; fd <= 9; ++fd) close(fd);
    free(p);
    free(q);
    return bad;
}

int main(void) {
    int bad = 0;
    for (int how = 0; how < 3; ++how) bad |= check(how);
    if (bad) {
        printf("descriptors: FAILED\n");
        return 1;
    }
    printf("descriptors kept apart\n");
    return 0;
}
