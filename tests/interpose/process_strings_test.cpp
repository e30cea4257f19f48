// Programs started from strings in closed shared memory (the blocks' data
// on the device): posix_spawn's path, arguments and environment, and the
// commands of system and popen, reach the new program as written (the
// kernel alone would fail the exec: the child exits with 127).  The exec
// family itself runs in its own process: interpose.exec.* (exec_check.c).
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "helpers.h"
#include "os/fault_injection.h"

using namespace interpose_test;

namespace {

// Strings written into a closed buffer where each spans two blocks where
// it can, and arrays of their addresses in another closed buffer.
struct ClosedStrings {
    ClosedBuffer text, arrays;
    size_t next = kThreshold - 8;
    // The string's address; its blocks closed again, the bytes kept.
    char *put(const std::string &s) {
        char *p = reinterpret_cast<char *>(text.p) + next;
        memcpy(p, s.c_str(), s.size() + 1);
        next += kThreshold;  // the next block's end
        if (next + s.size() >= ClosedBuffer::kSize) next = kThreshold / 2;
        close();
        return p;
    }
    void close() {
        text.keep_on_device();
        arrays.keep_on_device();
    }
    char **array(size_t at) { return reinterpret_cast<char **>(arrays.p + kThreshold - 16 + at * 64); }
};

// What a child wrote to the pipe until it closed it.
std::string drain(int fd) {
    std::string out;
    char buf[256];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
}

// A vfork child, its output to fd, that execs path with execve (with envp)
// or execv; exits with 14 when the exec fails with EFAULT.
__attribute__((noinline)) pid_t vfork_exec(bool with_env, int fd, const char *path, char **argv, char **envp) {
    pid_t pid = vfork();
    if (pid == 0) {
        dup2(fd, 1);
        if (with_env) execve(path, argv, envp);
        else execv(path, argv);
        _exit(errno == EFAULT ? 14 : 127);
    }
    return pid;
}

// vfork_exec's child run to its end: its wait status (-1 where it could not
// be started or waited for) and what it wrote.
struct ChildRun {
    int status = -1;
    std::string out;
};
ChildRun run_vfork_exec(bool with_env, const char *path, char **argv, char **envp) {
    ChildRun r;
    int out[2];
    if (pipe(out) != 0) return r;
    pid_t pid = vfork_exec(with_env, out[1], path, argv, envp);
    ::close(out[1]);
    if (pid > 0) r.out = drain(out[0]);
    ::close(out[0]);
    if (pid > 0 && waitpid(pid, &r.status, 0) != pid) r.status = -1;
    return r;
}

}  // namespace

TEST(ProcessStringsTest, PosixSpawnTakesPathArgumentsAndEnvironmentFromClosedBlocks) {
    ClosedStrings s;
    ASSERT_TRUE(shared(s.text.p));
    char *path = s.put("/bin/sh");
    char *a0 = s.put("sh"), *a1 = s.put("-c"), *a2 = s.put("printf '%s|%s' \"$0\" \"$ADSM_SPAWN\""),
         *a3 = s.put("argument"), *e0 = s.put("ADSM_SPAWN=environment");
    char **argv = s.array(0), **envp = s.array(8);
    argv[0] = a0, argv[1] = a1, argv[2] = a2, argv[3] = a3, argv[4] = nullptr;
    envp[0] = e0, envp[1] = nullptr;
    for (bool search : {false, true}) {
        SCOPED_TRACE(search ? "posix_spawnp" : "posix_spawn");
        int out[2];
        ASSERT_EQ(pipe(out), 0);
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, out[1], 1);
        posix_spawn_file_actions_addclose(&actions, out[0]);
        s.close();
        pid_t pid = 0;
        int r = search ? posix_spawnp(&pid, path, &actions, nullptr, argv, envp)
                       : posix_spawn(&pid, path, &actions, nullptr, argv, envp);
        posix_spawn_file_actions_destroy(&actions);
        ::close(out[1]);
        ASSERT_EQ(r, 0) << strerror(r);
        const std::string got = drain(out[0]);
        ::close(out[0]);
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
        EXPECT_EQ(got, "argument|environment");
    }
}

// A vfork child (Python's subprocess starts programs so) execs from strings
// in closed blocks: it may not call into the runtime, whose locks and
// threads are its parent's, and the kernel alone failed the exec with
// EFAULT.
TEST(ProcessStringsTest, AVforkChildExecsFromClosedBlocks) {
    ClosedStrings s;
    char *path = s.put("/bin/sh");
    char *a0 = s.put("sh"), *a1 = s.put("-c"), *a2 = s.put("printf '%s|%s' \"$0\" \"$ADSM_SPAWN\""),
         *a3 = s.put("argument"), *e0 = s.put("ADSM_SPAWN=environment");
    char **argv = s.array(0), **envp = s.array(8);
    argv[0] = a0, argv[1] = a1, argv[2] = a2, argv[3] = a3, argv[4] = nullptr;
    envp[0] = e0, envp[1] = nullptr;
    for (int how = 0; how < 2; ++how) {
        SCOPED_TRACE(how == 0 ? "execve" : "execv");
        s.close();
        const ChildRun run = run_vfork_exec(how == 0, path, argv, envp);
        EXPECT_TRUE(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0)
            << "status " << run.status << " (14 << 8: EFAULT)";
        EXPECT_EQ(run.out, how == 0 ? "argument|environment" : "argument|");
    }
}

// The same while another thread keeps closing the blocks (its kernels use
// them): one closed between the child's reads and the kernel's failed the
// exec with EFAULT; such an exec reads them again and tries again.
TEST(ProcessStringsTest, AVforkChildExecsWhileAnotherThreadClosesItsStrings) {
    std::atomic<ClosedStrings *> shared_strings{nullptr};
    std::atomic<bool> stop{false};
    std::atomic<long> closes{0};
    // The strings are the closing thread's (its context's objects, which its
    // kernels release).
    std::thread closer([&] {
        ClosedStrings s;
        char *path = s.put("/bin/sh");
        char *a0 = s.put("sh"), *a1 = s.put("-c"), *a2 = s.put("printf '%s' \"$0\""), *a3 = s.put("argument");
        char **argv = s.array(0);
        argv[0] = a0, argv[1] = a1, argv[2] = a2, argv[3] = a3, argv[4] = nullptr;
        *s.array(8) = path;
        s.close();
        shared_strings = &s;
        while (!stop) {
            s.close();
            ++closes;
        }
    });
    while (!shared_strings) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ClosedStrings &s = *shared_strings;
    char *path = *s.array(8);
    int efaults = 0, wrong = 0;
    const int kExecs = 150;
    for (int i = 0; i < kExecs; ++i) {
        const ChildRun run = run_vfork_exec(false, path, s.array(0), nullptr);
        if (WIFEXITED(run.status) && WEXITSTATUS(run.status) == 14) ++efaults;
        else if (run.status == -1 || !WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0 || run.out != "argument")
            ++wrong;
    }
    stop = true;
    closer.join();
    EXPECT_EQ(efaults, 0) << "of " << kExecs << " execs, with the strings closed " << closes << " times meanwhile";
    EXPECT_EQ(wrong, 0);
    EXPECT_GT(closes.load(), 10) << "the strings were not closed while the children execed";
}

TEST(ProcessStringsTest, SystemAndPopenTakeTheirCommandsFromClosedBlocks) {
    ClosedStrings s;
    char *exit7 = s.put("exit 7");
    int status = system(exit7);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 7) << "127: the shell never got its command";

    char *echo = s.put("echo popen from shared memory");
    FILE *f = popen(echo, "r");
    ASSERT_NE(f, nullptr) << strerror(errno);
    char line[64] = {};
    ASSERT_NE(fgets(line, sizeof line, f), nullptr);
    EXPECT_EQ(pclose(f), 0);
    EXPECT_EQ(std::string(line), "popen from shared memory\n");
}

// The environment system and popen pass (environ) with a string put there
// from shared memory: the shell finds it, and environ is the program's
// again after the call.
TEST(ProcessStringsTest, SystemAndPopenPassAnEnvironmentStringFromClosedBlocks) {
    ClosedStrings s;
    char *var = s.put("ADSM_PUT=from-shared-memory");
    ASSERT_EQ(putenv(var), 0);
    char **before = environ;
    s.close();
    int status = system("test \"$ADSM_PUT\" = from-shared-memory");
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the shell did not find the variable; 127: no shell";
    EXPECT_EQ(environ, before);
    s.close();
    FILE *f = popen("echo \"$ADSM_PUT\"", "r");
    ASSERT_NE(f, nullptr) << strerror(errno);
    char line[64] = {};
    ASSERT_NE(fgets(line, sizeof line, f), nullptr);
    EXPECT_EQ(pclose(f), 0);
    EXPECT_EQ(std::string(line), "from-shared-memory\n");
    EXPECT_EQ(environ, before);
    EXPECT_STREQ(getenv("ADSM_PUT"), "from-shared-memory");
    ASSERT_EQ(unsetenv("ADSM_PUT"), 0);
}

TEST(ProcessStringsTest, AStringThatCannotBeReadFailsTheSpawnAndStartsNothing) {
    namespace inj = adsm::os::injection;
    // (Batch reads the host copy, which cannot fail.)
    const bool can_fail = protocol_in_use() != "batch";
    ClosedStrings s;
    char *path = s.put("/bin/true");
    // (The array on the stack: a CPU read of a closed one would take the
    // injected failure in the fault handler instead.)
    char *argv[] = {s.put("true"), nullptr};
    inj::arm(inj::Site::device_copy, 1);
    pid_t pid = 0;
    int r = posix_spawn(&pid, path, nullptr, nullptr, argv, nullptr);
    inj::arm(inj::Site::device_copy, 0);
    if (can_fail) {
        EXPECT_EQ(r, EFAULT);
        int status = 0;
        EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1) << "a child was started";
    } else {
        ASSERT_EQ(r, 0) << strerror(r);
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
    }
}
