/* A program that cancels threads blocked in calls the runtime interposes
 * (reads, receives, waits and messages into shared memory, which go
 * through the runtime's staging), run under the preload.  Cancellation
 * unwinds each thread through the runtime's frames with the C library's
 * unwinder: where the runtime's own copy of the unwinder met it there, the
 * whole process aborted at the first cancellation.  Each thread's cleanup
 * handler must run, each join must see PTHREAD_CANCELED, and the same
 * calls must work afterwards.  Prints "cancellation clean" when all did. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kBytes = 4 << 20, kKinds = 5, kRounds = 4, kBig = 24 << 20, kFileRounds = 40 };

static unsigned char *g_buf, *g_big;
static int g_pipe[2], g_sock[2], g_queue, g_file;
static mqd_t g_mq;
static volatile int g_cleanups;

static void cleanup(void *arg) {
    (void)arg;
    __atomic_add_fetch(&g_cleanups, 1, __ATOMIC_SEQ_CST);
}

static void *blocked(void *arg) {
    long kind = (long)arg;
    pthread_cleanup_push(cleanup, NULL);
    switch (kind) {
    case 0: read(g_pipe[0], g_buf, kBytes); break;
    case 1: recv(g_sock[0], g_buf + 1000, kBytes / 2, 0); break;
    case 2: {
        struct pollfd *fds = (struct pollfd *)(g_buf + 4096);
        fds[0].fd = g_pipe[0];
        fds[0].events = POLLIN;
        poll(fds, 1, -1);
        break;
    }
    case 3: msgrcv(g_queue, g_buf + 8192, 4096, 0, 0); break;
    default: mq_receive(g_mq, (char *)g_buf + 65536, 8192, NULL); break;
    }
    pthread_cleanup_pop(0);
    return (void *)1;
}

/* Reads and writes a file in rounds through both staging buffers, with one
 * round's copies under way while the next round's call runs: cancelled at
 * such a call, the thread's staging buffers go with it, and copies still
 * reading or filling them must be over by then. */
static void *streaming(void *arg) {
    (void)arg;
    pthread_cleanup_push(cleanup, NULL);
    for (;;) {
        if (pread(g_file, g_big, kBig, 0) != kBig) break;
        if (pwrite(g_file, g_big, kBig, kBig) != kBig) break;
    }
    pthread_cleanup_pop(0);
    return (void *)1;
}

int main(void) {
    g_buf = malloc(kBytes); /* shared at the threshold the checks set */
    memset(g_buf, 7, kBytes);
    if (pipe(g_pipe) || socketpair(AF_UNIX, SOCK_STREAM, 0, g_sock)) return perror("pipes"), 2;
    g_queue = msgget(IPC_PRIVATE, 0600);
    char name[64];
    snprintf(name, sizeof name, "/adsm-cancel-%d", (int)getpid());
    struct mq_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.mq_maxmsg = 4;
    attr.mq_msgsize = 8192;
    g_mq = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, &attr);
    if (g_queue < 0 || g_mq == (mqd_t)-1) return perror("queues"), 2;
    mq_unlink(name);

    int bad = 0;
    for (int round = 0; round < kRounds; ++round)
        for (long kind = 0; kind < kKinds; ++kind) {
            pthread_t t;
            if (pthread_create(&t, NULL, blocked, (void *)kind)) return perror("pthread_create"), 2;
            usleep(3000); /* blocked in the call by now */
            pthread_cancel(t);
            void *res = NULL;
            pthread_join(t, &res);
            if (res != PTHREAD_CANCELED) {
                printf("kind %ld: not cancelled\n", kind);
                ++bad;
            }
        }
    /* Threads cancelled in the middle of big reads and writes. */
    char path[] = "/tmp/adsm-cancel-XXXXXX";
    g_file = mkstemp(path);
    if (g_file < 0) return perror("mkstemp"), 2;
    unlink(path);
    g_big = malloc(kBig);
    memset(g_big, 3, kBig);
    if (pwrite(g_file, g_big, kBig, 0) != kBig) return perror("pwrite"), 2;
    srand(7);
    for (int round = 0; round < kFileRounds; ++round) {
        pthread_t t;
        if (pthread_create(&t, NULL, streaming, NULL)) return perror("pthread_create"), 2;
        usleep(500 + rand() % 20000);
        pthread_cancel(t);
        void *res = NULL;
        pthread_join(t, &res);
        if (res != PTHREAD_CANCELED) {
            printf("streaming: not cancelled\n");
            ++bad;
        }
    }
    const int threads = kRounds * kKinds + kFileRounds;
    if (g_cleanups != threads) {
        printf("%d of %d cleanup handlers ran\n", g_cleanups, threads);
        ++bad;
    }
    if (pread(g_file, g_big, kBig, 0) != kBig || g_big[kBig - 1] != 3) printf("a big read after: wrong\n"), ++bad;
    close(g_file);
    free(g_big);

    /* The same calls afterwards, on the same shared memory. */
    if (write(g_pipe[1], "abcde", 5) != 5 || read(g_pipe[0], g_buf + 100, 5) != 5 || memcmp(g_buf + 100, "abcde", 5))
        printf("read after the cancellations: wrong\n"), ++bad;
    if (send(g_sock[1], "xyz", 3, 0) != 3 || recv(g_sock[0], g_buf + 200, 3, 0) != 3 || memcmp(g_buf + 200, "xyz", 3))
        printf("recv after the cancellations: wrong\n"), ++bad;
    struct {
        long type;
        char text[8];
    } m = {5, "msg"};
    if (msgsnd(g_queue, &m, sizeof m.text, 0) || msgrcv(g_queue, g_buf + 300, sizeof m.text, 0, 0) != sizeof m.text ||
        strcmp((char *)g_buf + 300 + sizeof(long), "msg"))
        printf("msgrcv after the cancellations: wrong\n"), ++bad;
    msgctl(g_queue, IPC_RMID, NULL);
    mq_close(g_mq);
    free(g_buf);
    if (bad) {
        printf("cancellation: %d checks FAILED\n", bad);
        return 1;
    }
    printf("cancellation clean: %d threads cancelled in staged calls\n", threads);
    return 0;
}
