/*
 * A program with a big, little-used heap buffer that starts children with
 * fork, for the preload cost benchmark (preload-cost): each child reads a
 * byte and exits.  Under the preload the buffer is shared memory, which a
 * fork child must get a private copy of; the copy should cost what the
 * buffer holds, not what it spans.
 *
 *   adsm-fork-children [CHILDREN [MIB [USED_MIB]]]    (default 20, 512, 16)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int children = argc > 1 ? atoi(argv[1]) : 20;
    size_t bytes = (size_t)(argc > 2 ? atoi(argv[2]) : 512) << 20;
    size_t used = (size_t)(argc > 3 ? atoi(argv[3]) : 16) << 20;
    if (used > bytes) used = bytes;
    unsigned char *p = malloc(bytes);
    if (!p) {
        perror("malloc");
        return 1;
    }
    memset(p, 7, used);
    for (int i = 0; i < children; ++i) {
        pid_t child = fork();
        if (child < 0) {
            perror("fork");
            return 1;
        }
        if (child == 0) _exit(used && p[used - 1] != 7 ? 2 : 0);
        int status = 0;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "child %d failed (status %d)\n", i, status);
            return 1;
        }
    }
    free(p);
    return 0;
}
