// Benchmarks whose measurements each need a process of their own (the
// runtime reads its configuration once): the parent runs this same program
// again as `argv0 --child ARGS...` with `env` added, and reads back the
// `key=value` words the child prints on its standard output.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace bench {

// The child's key=value words; empty (with a message) if it failed.
inline std::map<std::string, double> run_child(const char *argv0, const std::vector<std::string> &args,
                                               const std::vector<std::string> &env) {
    std::map<std::string, double> kv;
    int fds[2];
    if (pipe(fds) != 0) return kv;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        for (const auto &e : env) putenv(strdup(e.c_str()));
        std::vector<char *> argv{const_cast<char *>(argv0), const_cast<char *>("--child")};
        for (const auto &a : args) argv.push_back(const_cast<char *>(a.c_str()));
        argv.push_back(nullptr);
        execv("/proc/self/exe", argv.data());
        _exit(127);
    }
    close(fds[1]);
    std::string out;
    char buf[512];
    ssize_t got;
    while ((got = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(got));
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "%s: the %s run failed\n", argv0, args.empty() ? "?" : args[0].c_str());
        return kv;
    }
    for (size_t pos = 0; pos < out.size();) {
        size_t eq = out.find('=', pos), end = out.find_first_of(" \n", pos);
        if (eq != std::string::npos && (end == std::string::npos || eq < end))
            kv[out.substr(pos, eq - pos)] = atof(out.c_str() + eq + 1);
        pos = end == std::string::npos ? out.size() : end + 1;
    }
    return kv;
}

}  // namespace bench
