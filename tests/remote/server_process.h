// Starts adsm-device-server for a test and reads what it says.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace remote_test {

inline const char *kServer = ADSM_DEVICE_SERVER;

inline std::string write_key(const std::string &content, mode_t mode) {
    char tmpl[] = "/tmp/adsm-server-key-XXXXXX";
    int fd = mkstemp(tmpl);
    EXPECT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
    close(fd);
    chmod(tmpl, mode);
    return tmpl;
}

// Runs the server with `args` (and `env` added to its environment); its
// first line tells the port.
class Server {
public:
    explicit Server(std::vector<std::string> args, std::vector<std::string> env = {}) {
        int out[2], err[2];
        EXPECT_EQ(pipe(out), 0);
        EXPECT_EQ(pipe(err), 0);
        pid_ = fork();
        if (pid_ == 0) {
            dup2(out[1], 1);
            dup2(err[1], 2);
            for (auto &e : env) putenv(e.data());
            std::vector<char *> argv{const_cast<char *>(kServer)};
            for (auto &a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            execv(kServer, argv.data());
            _exit(127);
        }
        close(out[1]);
        close(err[1]);
        out_ = fdopen(out[0], "r");
        err_fd_ = err[0];
        char line[256] = {};
        if (fgets(line, sizeof line, out_)) {
            first_line_ = line;
            if (const char *colon = strrchr(line, ':')) port_ = atoi(colon + 1);
        }
    }
    ~Server() {
        if (pid_ > 0 && !waited_) {
            kill(pid_, SIGTERM);
            waitpid(pid_, nullptr, 0);
        }
        if (out_) fclose(out_);
        close(err_fd_);
    }
    std::string port() const { return std::to_string(port_); }
    int exit_status() {
        int st = 0;
        waitpid(pid_, &st, 0);
        waited_ = true;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    // Everything it logged so far (after it ended, or whatever is there).
    std::string log() {
        char buf[4096];
        fcntl_nonblock();
        for (ssize_t n; (n = read(err_fd_, buf, sizeof buf)) > 0;) log_.append(buf, static_cast<size_t>(n));
        return log_;
    }
    // Whether it logs `needle` within `timeout_ms`: the server logs from
    // its own threads, after the client already saw the outcome.
    bool logs(const std::string &needle, int timeout_ms = 5000) {
        for (int waited = 0;; waited += 10) {
            if (log().find(needle) != std::string::npos) return true;
            if (waited >= timeout_ms) return false;
            usleep(10000);
        }
    }
    const std::string &first_line() const { return first_line_; }
    // -1 while it runs, else how it ended.
    int exit_status_if_running() {
        int st = 0;
        if (waitpid(pid_, &st, WNOHANG) == 0) return -1;
        waited_ = true;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    pid_t pid() const { return pid_; }
    // Still connected but silent, as a machine cut off without a word is.
    void stop() { kill(pid_, SIGSTOP); }
    // Gone at once, as a crashed or unplugged machine is.
    void kill_now() {
        kill(pid_, SIGKILL);
        exit_status();
    }

private:
    void fcntl_nonblock() {
        int flags = fcntl(err_fd_, F_GETFL);
        fcntl(err_fd_, F_SETFL, flags | O_NONBLOCK);
    }
    pid_t pid_ = -1;
    FILE *out_ = nullptr;
    int err_fd_ = -1;
    int port_ = 0;
    bool waited_ = false;
    std::string first_line_;
    std::string log_;
};


}  // namespace remote_test
