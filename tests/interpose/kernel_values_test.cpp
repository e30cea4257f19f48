// Calls outside the I/O families that fill or read a buffer of a size the
// program gives, with the buffer in shared memory whose blocks are closed
// (their data on the device): extended attributes, directory entries,
// System V and POSIX queues, semaphores, another process's memory, and
// resident pages.  Each works as on ordinary memory (the kernel alone
// would fail it with EFAULT), and only the bytes the kernel wrote change.
#include <dirent.h>
#include <fcntl.h>
#include <mqueue.h>
#include <sys/ipc.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "helpers.h"

using namespace interpose_test;

TEST(KernelValuesTest, ExtendedAttributesComeFromAndLandInClosedBlocks) {
    TempFile f(16);
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    // The path, the name and a 2000-byte value across a block's end, all in
    // shared memory the device wrote last.
    char *path = reinterpret_cast<char *>(b.p + 100);
    char *name = reinterpret_cast<char *>(b.p + 8000);
    uint8_t *value = b.p + kThreshold - 1000;
    strcpy(path, f.path.c_str());
    strcpy(name, "user.adsm.value");
    for (size_t i = 0; i < 2000; ++i) value[i] = static_cast<uint8_t>(i * 3 + 1);
    b.keep_on_device();
    ASSERT_EQ(setxattr(path, name, value, 2000, 0), 0) << strerror(errno);
    ASSERT_EQ(fsetxattr(f.fd, "user.adsm.second", value + 10, 100, 0), 0) << strerror(errno);

    // Read back by all three names into closed blocks.
    std::vector<uint8_t> expect(value, value + 2000);
    for (int how = 0; how < 3; ++how) {
        SCOPED_TRACE(how == 0 ? "getxattr" : how == 1 ? "lgetxattr" : "fgetxattr");
        b.close();
        uint8_t *out = b.p + 2 * kThreshold - 700;
        ssize_t r = how == 0   ? getxattr(f.path.c_str(), "user.adsm.value", out, 4000)
                    : how == 1 ? lgetxattr(f.path.c_str(), "user.adsm.value", out, 4000)
                               : fgetxattr(f.fd, "user.adsm.value", out, 4000);
        ASSERT_EQ(r, 2000) << strerror(errno);
        EXPECT_TRUE(std::equal(expect.begin(), expect.end(), out));
        EXPECT_TRUE(b.kept_outside(out, 2000));
    }
    // A size query writes nothing; a buffer too small is ERANGE, as on any memory.
    b.close();
    EXPECT_EQ(getxattr(f.path.c_str(), "user.adsm.value", nullptr, 0), 2000);
    errno = 0;
    EXPECT_EQ(fgetxattr(f.fd, "user.adsm.value", b.p + 5, 10), -1);
    EXPECT_EQ(errno, ERANGE);
    EXPECT_TRUE(b.kept_outside(b.p, 0));

    // The list of names, into a closed block.
    char *list = reinterpret_cast<char *>(b.p + kThreshold - 20);
    for (int how = 0; how < 3; ++how) {
        b.close();
        ssize_t r = how == 0   ? listxattr(f.path.c_str(), list, 1000)
                    : how == 1 ? llistxattr(f.path.c_str(), list, 1000)
                               : flistxattr(f.fd, list, 1000);
        ASSERT_GT(r, 0) << strerror(errno);
        std::set<std::string> names;
        for (ssize_t i = 0; i < r; i += static_cast<ssize_t>(strlen(list + i)) + 1) names.insert(list + i);
        EXPECT_TRUE(names.count("user.adsm.value") && names.count("user.adsm.second")) << how;
    }

    // Removal by a name the device wrote.
    strcpy(name, "user.adsm.second");
    b.keep_on_device();
    ASSERT_EQ(fremovexattr(f.fd, name), 0) << strerror(errno);
    errno = 0;
    EXPECT_EQ(fgetxattr(f.fd, "user.adsm.second", nullptr, 0), -1);
    EXPECT_EQ(errno, ENODATA);
    strcpy(path, f.path.c_str());
    b.keep_on_device();
    ASSERT_EQ(removexattr(path, "user.adsm.value"), 0) << strerror(errno);
    // A name longer than the kernel takes is its ERANGE, read from a closed block.
    memset(name, 'n', 300);
    memcpy(name, "user.", 5);
    name[300] = 0;
    b.keep_on_device();
    errno = 0;
    EXPECT_EQ(setxattr(f.path.c_str(), name, "v", 1, 0), -1);
    EXPECT_EQ(errno, ERANGE);
}

TEST(KernelValuesTest, DirectoryEntriesLandInAClosedBlock) {
    char tmpl[] = "/tmp/adsm-dir-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl;
    std::set<std::string> made = {".", ".."};
    for (int i = 0; i < 300; ++i) {
        std::string n = "entry-with-a-longish-name-" + std::to_string(i);
        made.insert(n);
        int fd = open((dir + "/" + n).c_str(), O_CREAT | O_WRONLY, 0600);
        ASSERT_GE(fd, 0);
        close(fd);
    }
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0);
    // Several calls of 4 KiB each across a block's end: the directory's
    // position moves on once per call.
    std::set<std::string> seen;
    uint8_t *buf = b.p + kThreshold - 2048;
    for (;;) {
        b.close();
        ssize_t r = getdents64(fd, buf, 4096);
        ASSERT_GE(r, 0) << strerror(errno);
        if (r == 0) break;
        EXPECT_TRUE(b.kept_outside(buf, static_cast<size_t>(r)));
        for (ssize_t at = 0; at < r;) {
            auto *d = reinterpret_cast<struct dirent64 *>(buf + at);
            EXPECT_TRUE(seen.insert(d->d_name).second) << "twice: " << d->d_name;
            at += d->d_reclen;
        }
    }
    close(fd);
    EXPECT_EQ(seen, made);
    for (const std::string &n : made)
        if (n != "." && n != "..") unlink((dir + "/" + n).c_str());
    rmdir(dir.c_str());
}

namespace {
struct Message {
    long type;
    char text[6000];
};
}  // namespace

TEST(KernelValuesTest, SystemVMessagesAndControlsGoThroughClosedBlocks) {
    int q = msgget(IPC_PRIVATE, 0600);
    ASSERT_GE(q, 0) << strerror(errno);
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    auto *out = reinterpret_cast<Message *>(b.p + kThreshold - 3000);
    out->type = 7;
    for (size_t i = 0; i < sizeof out->text; ++i) out->text[i] = static_cast<char>('a' + i % 26);
    b.keep_on_device();
    ASSERT_EQ(msgsnd(q, out, sizeof out->text, 0), 0) << strerror(errno);

    b.close();
    auto *in = reinterpret_cast<Message *>(b.p + 2 * kThreshold - 100);
    ASSERT_EQ(msgrcv(q, in, sizeof in->text, 0, IPC_NOWAIT), static_cast<ssize_t>(sizeof in->text)) << strerror(errno);
    EXPECT_EQ(in->type, 7);
    for (size_t i = 0; i < sizeof in->text; ++i) ASSERT_EQ(in->text[i], static_cast<char>('a' + i % 26)) << i;
    EXPECT_TRUE(b.kept_outside(in, sizeof *in));
    errno = 0;
    EXPECT_EQ(msgrcv(q, in, sizeof in->text, 0, IPC_NOWAIT), -1);
    EXPECT_EQ(errno, ENOMSG) << "the message was taken once";

    b.close();
    auto *ds = b.at_block_end<struct msqid_ds>();
    ASSERT_EQ(msgctl(q, IPC_STAT, ds), 0) << strerror(errno);
    EXPECT_EQ(ds->msg_perm.mode & 0777, 0600u);
    EXPECT_EQ(ds->msg_qnum, 0u);
    EXPECT_TRUE(b.kept_outside(ds, sizeof *ds));
    ds->msg_perm.mode = 0640;
    b.keep_on_device();
    ASSERT_EQ(msgctl(q, IPC_SET, ds), 0) << strerror(errno);
    struct msqid_ds mine;
    ASSERT_EQ(msgctl(q, IPC_STAT, &mine), 0);
    EXPECT_EQ(mine.msg_perm.mode & 0777, 0640u) << "the kernel read the device's bytes";
    ASSERT_EQ(msgctl(q, IPC_RMID, nullptr), 0);

    // A semaphore set: operations, and every value at once.
    int s = semget(IPC_PRIVATE, 3, 0600);
    ASSERT_GE(s, 0) << strerror(errno);
    auto *vals = reinterpret_cast<unsigned short *>(b.p + kThreshold - 2);
    vals[0] = 4, vals[1] = 5, vals[2] = 6;
    b.keep_on_device();
    ASSERT_EQ(semctl(s, 0, SETALL, vals), 0) << strerror(errno);
    auto *ops = reinterpret_cast<struct sembuf *>(b.p + 2 * kThreshold - 6);
    ops[0] = {1, -2, 0};
    ops[1] = {2, 3, 0};
    b.keep_on_device();
    ASSERT_EQ(semop(s, ops, 2), 0) << strerror(errno);
    b.close();
    ASSERT_EQ(semctl(s, 0, GETALL, vals), 0) << strerror(errno);
    EXPECT_EQ(vals[0], 4);
    EXPECT_EQ(vals[1], 3);
    EXPECT_EQ(vals[2], 9);
    EXPECT_TRUE(b.kept_outside(vals, 3 * sizeof *vals));
    b.close();
    auto *sds = b.at_block_end<struct semid_ds>();
    ASSERT_EQ(semctl(s, 0, IPC_STAT, sds), 0) << strerror(errno);
    EXPECT_EQ(sds->sem_nsems, 3u);
    ops[0] = {0, -5, 0};  // more than there is: the timeout ends the wait
    b.keep_on_device();
    struct timespec brief = {0, 1000000};
    errno = 0;
    EXPECT_EQ(semtimedop(s, ops, 1, &brief), -1);
    EXPECT_EQ(errno, EAGAIN);
    ASSERT_EQ(semctl(s, 0, IPC_RMID), 0);

    int m = shmget(IPC_PRIVATE, 8192, 0600);
    ASSERT_GE(m, 0) << strerror(errno);
    b.close();
    auto *shm = b.at_block_end<struct shmid_ds>();
    ASSERT_EQ(shmctl(m, IPC_STAT, shm), 0) << strerror(errno);
    EXPECT_EQ(shm->shm_segsz, 8192u);
    ASSERT_EQ(shmctl(m, IPC_RMID, nullptr), 0);
}

TEST(KernelValuesTest, PosixQueueMessagesGoThroughClosedBlocks) {
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    char *name = reinterpret_cast<char *>(b.p + 500);
    snprintf(name, 64, "/adsm-values-%d", getpid());
    auto *attr = b.at_block_end<struct mq_attr>();
    *attr = {};
    attr->mq_maxmsg = 4;
    attr->mq_msgsize = 5000;
    b.keep_on_device();
    mqd_t q = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, attr);
    ASSERT_NE(q, static_cast<mqd_t>(-1)) << strerror(errno);

    char *msg = reinterpret_cast<char *>(b.p + kThreshold - 2500);
    for (int i = 0; i < 5000; ++i) msg[i] = static_cast<char>(i * 11);
    b.keep_on_device();
    ASSERT_EQ(mq_send(q, msg, 5000, 3), 0) << strerror(errno);
    struct timespec later;
    clock_gettime(CLOCK_REALTIME, &later);
    later.tv_sec += 5;
    auto *when = reinterpret_cast<struct timespec *>(b.p + 2 * kThreshold - 8);
    *when = later;
    b.keep_on_device();
    ASSERT_EQ(mq_timedsend(q, msg, 100, 9, when), 0) << strerror(errno);

    b.close();
    char *in = reinterpret_cast<char *>(b.p + 2 * kThreshold - 3000);
    auto *prio = reinterpret_cast<unsigned *>(b.p + kThreshold - 2);
    ASSERT_EQ(mq_receive(q, in, 5000, prio), 100) << strerror(errno);
    EXPECT_EQ(*prio, 9u) << "the higher priority first";
    b.close();
    *when = later;
    b.keep_on_device();
    ASSERT_EQ(mq_timedreceive(q, in, 5000, prio, when), 5000) << strerror(errno);
    EXPECT_EQ(*prio, 3u);
    for (int i = 0; i < 5000; ++i) ASSERT_EQ(in[i], static_cast<char>(i * 11)) << i;

    b.close();
    ASSERT_EQ(mq_getattr(q, attr), 0) << strerror(errno);
    EXPECT_EQ(attr->mq_msgsize, 5000);
    EXPECT_EQ(attr->mq_curmsgs, 0);
    EXPECT_TRUE(b.kept_outside(attr, sizeof *attr));
    mq_close(q);
    snprintf(name, 64, "/adsm-values-%d", getpid());
    b.keep_on_device();
    ASSERT_EQ(mq_unlink(name), 0) << strerror(errno);
}

TEST(KernelValuesTest, AnotherProcesssMemoryMovesToAndFromClosedBlocks) {
    // This process stands for the other one: its private memory is the
    // remote side, in several ranges, and more than one staging round.
    const size_t n = 6u << 20;
    // (Mapped, not allocated: the remote side must be ordinary memory, as
    // another process's is to this one's runtime.)
    auto *theirs = static_cast<uint8_t *>(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(theirs, MAP_FAILED);
    ASSERT_FALSE(shared(theirs));
    for (size_t i = 0; i < n; ++i) theirs[i] = static_cast<uint8_t>(i * 5 + i / 4096);
    auto *p = static_cast<uint8_t *>(malloc(n + 100));
    ASSERT_TRUE(shared(p));
    close_on_device(p, n + 100, 1);
    std::vector<struct iovec> remote;
    for (size_t at = 0; at < n;) {
        size_t len = std::min<size_t>(n - at, 300000 + remote.size() * 7777);
        remote.push_back({theirs + at, len});
        at += len;
    }
    struct iovec local[2] = {{p + 1, n / 2}, {p + 1 + n / 2, n - n / 2}};
    ASSERT_EQ(process_vm_readv(getpid(), local, 2, remote.data(), remote.size(), 0), static_cast<ssize_t>(n))
        << strerror(errno);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(p[1 + i], theirs[i]) << i;
    EXPECT_EQ(p[0], pattern(0, 1));
    EXPECT_EQ(p[n + 1], pattern(n + 1, 1));

    // And back: the device's bytes to the other side.
    close_on_device(p, n + 100, 2);
    ASSERT_EQ(process_vm_writev(getpid(), local, 2, remote.data(), remote.size(), 0), static_cast<ssize_t>(n))
        << strerror(errno);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(theirs[i], pattern(1 + i, 2)) << i;

    // A remote side shorter than the local one gives the kernel's short count.
    close_on_device(p, n + 100, 3);
    struct iovec one = {theirs, 5000};
    EXPECT_EQ(process_vm_readv(getpid(), local, 2, &one, 1, 0), 5000);
    EXPECT_EQ(p[1 + 4999], theirs[4999]);
    EXPECT_EQ(p[1 + 5000], pattern(5001, 3));
    free(p);
    munmap(theirs, n);
}

TEST(KernelValuesTest, TheKernelsLogLandsInAClosedBlockAsInPlainMemory) {
    // Reading all of it may need a privilege (dmesg_restrict): the answer
    // in shared memory must be the one in plain memory.
    std::vector<char> plain(16384);
    errno = 0;
    int r = klogctl(3, plain.data(), static_cast<int>(plain.size()));
    const int err = errno;
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    char *buf = reinterpret_cast<char *>(b.p + kThreshold - 8000);
    errno = 0;
    int s = klogctl(3, buf, static_cast<int>(plain.size()));
    if (r < 0) {
        EXPECT_EQ(s, -1);
        EXPECT_EQ(errno, err);
        EXPECT_TRUE(b.kept_outside(buf, 0));
        return;
    }
    ASSERT_GE(s, 0) << strerror(errno);
    // (Messages may arrive between the two reads: the first bytes match
    // unless the buffer wrapped.)
    EXPECT_GT(s, 0);
    EXPECT_TRUE(b.kept_outside(buf, static_cast<size_t>(s)));
}

TEST(KernelValuesTest, ResidentPagesLandInAClosedBlock) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void *m = mmap(nullptr, 64 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    for (size_t i = 0; i < 64; i += 2) static_cast<volatile char *>(m)[i * page] = 1;
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    unsigned char *vec = b.p + kThreshold - 30;
    ASSERT_EQ(mincore(m, 64 * page, vec), 0) << strerror(errno);
    for (size_t i = 0; i < 64; ++i) EXPECT_EQ(vec[i] & 1, i % 2 == 0 ? 1 : 0) << i;
    EXPECT_TRUE(b.kept_outside(vec, 64));
    munmap(m, 64 * page);
}

TEST(KernelValuesTest, TheSameCallsByNumberGoThroughClosedBlocks) {
    TempFile f(16);
    ClosedBuffer b;
    ASSERT_TRUE(shared(b.p));
    char *value = reinterpret_cast<char *>(b.p + kThreshold - 10);
    strcpy(value, "by-number");
    b.keep_on_device();
    ASSERT_EQ(syscall(SYS_setxattr, f.path.c_str(), "user.adsm.n", value, 9, 0), 0) << strerror(errno);
    b.close();
    ASSERT_EQ(syscall(SYS_fgetxattr, f.fd, "user.adsm.n", value, 100), 9) << strerror(errno);
    EXPECT_EQ(memcmp(value, "by-number", 9), 0);

    b.close();
    int dir = open("/", O_RDONLY | O_DIRECTORY);
    ASSERT_GE(dir, 0);
    long r = syscall(SYS_getdents64, dir, b.p + kThreshold - 100, 4096);
    ASSERT_GT(r, 0) << strerror(errno);
    EXPECT_TRUE(b.kept_outside(b.p + kThreshold - 100, static_cast<size_t>(r)));
    close(dir);

    int q = msgget(IPC_PRIVATE, 0600);
    ASSERT_GE(q, 0);
    auto *m = reinterpret_cast<Message *>(b.p + kThreshold - 50);
    m->type = 3;
    memset(m->text, 'q', 1000);
    b.keep_on_device();
    ASSERT_EQ(syscall(SYS_msgsnd, q, m, 1000, 0), 0) << strerror(errno);
    b.close();
    ASSERT_EQ(syscall(SYS_msgrcv, q, m, 1000, 0, IPC_NOWAIT), 1000) << strerror(errno);
    EXPECT_EQ(m->type, 3);
    EXPECT_EQ(m->text[999], 'q');
    msgctl(q, IPC_RMID, nullptr);

    b.close();
    char theirs[3000];
    memset(theirs, 'r', sizeof theirs);
    struct iovec local = {b.p + kThreshold - 1000, sizeof theirs}, remote = {theirs, sizeof theirs};
    ASSERT_EQ(syscall(SYS_process_vm_readv, getpid(), &local, 1, &remote, 1, 0), 3000) << strerror(errno);
    EXPECT_EQ(b.p[kThreshold - 1000 + 2999], 'r');
}
