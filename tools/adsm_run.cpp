// adsm-run: runs an unmodified program with the runtime preloaded.  It
// checks the options and every ADSM_* variable before the program starts
// (a typo fails here, naming itself, not halfway through a run), puts
// libadsm.so at the front of LD_PRELOAD and execs the program, so the exit
// status is the program's own.
#include <limits.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "protocols/protocol.h"
#include "support/config.h"

namespace {

const char *const kUsage =
    "usage: adsm-run [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with the adsm runtime preloaded: its large allocations become\n"
    "shared CPU/accelerator memory, and its CUDA and Level Zero calls go through\n"
    "the runtime.  The exit status is the program's.\n"
    "\n"
    "options:\n"
    "  --protocol P        coherence protocol (ADSM_PROTOCOL): %s\n"
    "  --block-size S      coherence block size (ADSM_BLOCK_SIZE), e.g. 64K, 1M\n"
    "  --device D          accelerator back-end (ADSM_DEVICE): sim, cpu, cuda, levelzero, remote; a\n"
    "                      list such as sim,sim gives the program several devices\n"
    "  --remote HOST:PORT  the adsm-device-server a remote device is (ADSM_REMOTE)\n"
    "  --remote-key FILE   the key shared with it, readable by its owner alone (ADSM_REMOTE_KEY)\n"
    "  --threshold S       smallest malloc served from shared memory (ADSM_MALLOC_THRESHOLD), or off\n"
    "  --gc                PROGRAM uses the Boehm collector (libgc): adsm's collector serves\n"
    "                      its GC_* calls, so its collected heap is shared memory; collections\n"
    "                      run on their own (ADSM_GC=auto).  A program that needs a GC_\n"
    "                      function adsm lacks is refused at start, naming it\n"
    "  --stats             print the runtime's statistics at exit (ADSM_STATS=1), the\n"
    "                      collector's among them\n"
    "  --stats=json:FILE   write them as JSON to FILE instead\n"
    "  --trace FILE        write a Chrome trace-event timeline to FILE (ADSM_TRACE);\n"
    "                      open it in https://ui.perfetto.dev or chrome://tracing\n"
    "  --profile[=N]       print the N (default 20) code locations of the program that\n"
    "                      caused the most faults and transfers (ADSM_PROFILE)\n"
    "  --library PATH      the libadsm.so to preload (default: the one installed with adsm-run)\n"
    "  --env NAME=VALUE    set any ADSM_* variable below\n"
    "  -h, --help          this text\n"
    "\n"
    "Every option sets a variable and wins over the same variable in the\n"
    "environment; other ADSM_* variables there are used as they are.  %%p in a\n"
    "FILE becomes the process id, so programs that start other programs write\n"
    "one file each.\n"
    "\n"
    "variables:\n";

void usage(FILE *out) {
    std::string names;
    for (const auto &p : adsm::protocols()) names += (names.empty() ? "" : ", ") + std::string(p.name);
    fprintf(out, kUsage, names.c_str());
    for (const adsm::ConfigVar &v : adsm::config_variables())
        fprintf(out, "  %s=%s\n      %s\n", v.name, v.values, v.help);
    fprintf(out, "\nprotocols:\n");
    for (const auto &p : adsm::protocols()) fprintf(out, "  %-8s %s\n", p.name, p.summary);
}

// Ends the launcher without the runtime's exit reports, which it links:
// a trace or statistics where a program never started the runtime are the
// program's to write, not the launcher's.
[[noreturn]] void leave(int status) {
    fflush(stdout);
    fflush(stderr);
    _exit(status);
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...) {
    fprintf(stderr, "adsm-run: ");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(adsm-run --help lists the options and variables)\n");
    leave(125);
}

std::string self_dir() {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return ".";
    buf[n] = '\0';
    std::string s = buf;
    return s.substr(0, s.rfind('/'));
}

// The library next to the launcher: the build tree keeps it one directory
// up, an installation in the library directory beside bin/.
std::string find_library() {
    std::string dir = self_dir();
    for (const std::string &candidate : {dir + "/../libadsm.so", dir + "/" ADSM_RUN_LIBDIR "/libadsm.so.0"}) {
        char real[PATH_MAX];
        if (access(candidate.c_str(), R_OK) == 0 && realpath(candidate.c_str(), real)) return real;
    }
    die("cannot find libadsm.so next to %s; name it with --library", dir.c_str());
}

bool known_variable(const std::string &name) {
    if (name == "ADSM_SIM_SERVER") return true;  // set by the runtime for its device process
    if (name == adsm::kLaunchedPidVariable) return true;
    for (const adsm::ConfigVar &v : adsm::config_variables())
        if (name == v.name) return true;
    return false;
}

}  // namespace

int main(int argc, char **argv) {
    std::map<std::string, std::string> set;  // variables the options ask for
    std::string library;
    int i = 1;
    auto value = [&](const char *opt) -> std::string {
        if (i + 1 >= argc) die("%s needs a value", opt);
        return argv[++i];
    };
    for (; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--") {
            ++i;
            break;
        }
        if (a.empty() || a[0] != '-') break;
        if (a == "-h" || a == "--help") {
            usage(stdout);
            leave(0);
        }
        if (a == "--protocol") {
            std::string p = value("--protocol");
            if (!adsm::find_protocol(p)) die("--protocol %s: no such protocol", p.c_str());
            set["ADSM_PROTOCOL"] = p;
        } else if (a == "--block-size") {
            set["ADSM_BLOCK_SIZE"] = value("--block-size");
        } else if (a == "--device") {
            set["ADSM_DEVICE"] = value("--device");
        } else if (a == "--remote") {
            std::string r = value("--remote");
            size_t colon = r.rfind(':');
            if (colon == std::string::npos || colon == 0 || colon + 1 == r.size())
                die("--remote %s: expected HOST:PORT", r.c_str());
            set["ADSM_REMOTE"] = r;
        } else if (a == "--remote-key") {
            set["ADSM_REMOTE_KEY"] = value("--remote-key");
        } else if (a == "--threshold") {
            set["ADSM_MALLOC_THRESHOLD"] = value("--threshold");
        } else if (a == "--gc") {
            set["ADSM_GC"] = "auto";
        } else if (a == "--stats") {
            set["ADSM_STATS"] = "1";
        } else if (a.rfind("--stats=", 0) == 0) {
            std::string v = a.substr(8);
            if (v.rfind("json:", 0) != 0 || v.size() == 5) die("%s: expected --stats or --stats=json:FILE", a.c_str());
            set["ADSM_STATS"] = v;
        } else if (a == "--trace") {
            set["ADSM_TRACE"] = value("--trace");
        } else if (a == "--profile") {
            set["ADSM_PROFILE"] = "1";
        } else if (a.rfind("--profile=", 0) == 0) {
            set["ADSM_PROFILE"] = a.substr(10);
        } else if (a == "--library") {
            library = value("--library");
            if (access(library.c_str(), R_OK) != 0) die("--library %s: %s", library.c_str(), strerror(errno));
        } else if (a == "--env") {
            std::string kv = value("--env");
            size_t eq = kv.find('=');
            if (eq == std::string::npos) die("--env %s: expected NAME=VALUE", kv.c_str());
            std::string name = kv.substr(0, eq);
            if (!known_variable(name)) die("--env %s: %s is not an adsm variable", kv.c_str(), name.c_str());
            set[name] = kv.substr(eq + 1);
        } else {
            die("unknown option %s", a.c_str());
        }
    }
    if (i >= argc) die("no program to run");

    // The runtime's own parser checks every value, the options' and the
    // environment's, and names what is wrong.
    auto lookup = [&](const char *name) -> const char * {
        auto it = set.find(name);
        return it != set.end() ? it->second.c_str() : getenv(name);
    };
    adsm::Config config;
    if (adsm::parse_config(lookup, &config) != adsmSuccess) die("%s", adsm::last_detail());
    if (!adsm::find_protocol(config.protocol)) die("ADSM_PROTOCOL=%s: no such protocol", config.protocol.c_str());
    for (char **e = environ; *e; ++e) {
        std::string name(*e, strcspn(*e, "="));
        if (name.rfind("ADSM_", 0) == 0 && !known_variable(name))
            fprintf(stderr, "adsm-run: warning: %s is set but is not an adsm variable (a misspelling?)\n", name.c_str());
    }

    // The files are written at the program's exit: find out now that they
    // cannot be (without creating them: the program may never start the
    // runtime).  The program keeps this process's id, so %p names its file.
    auto writable = [](const std::string &pattern, const char *what) {
        std::string path = adsm::file_for_process(pattern);
        size_t slash = path.rfind('/');
        std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
        bool ok = access(path.c_str(), F_OK) == 0 ? access(path.c_str(), W_OK) == 0 : access(dir.c_str(), W_OK | X_OK) == 0;
        if (!ok) die("%s %s: cannot write it: %s", what, path.c_str(), strerror(errno));
    };
    if (!config.trace_file.empty()) {
        writable(config.trace_file, "ADSM_TRACE");
        // A fresh file for this run: a process of it that never uses shared
        // memory fills only an empty one, and must not keep an old timeline.
        if (config.trace_file.find("%p") == std::string::npos) {
            std::string path = adsm::file_for_process(config.trace_file);
            if (FILE *f = fopen(path.c_str(), "w")) fclose(f);
        }
    }
    if (!config.stats_json.empty()) writable(config.stats_json, "ADSM_STATS");

    if (library.empty()) library = find_library();
    for (auto &[k, v] : set) setenv(k.c_str(), v.c_str(), 1);
    const char *old = getenv("LD_PRELOAD");
    std::string preload = library + (old && *old ? ":" + std::string(old) : "");
    setenv("LD_PRELOAD", preload.c_str(), 1);
    setenv(adsm::kLaunchedPidVariable, std::to_string(getpid()).c_str(), 1);
    execvp(argv[i], argv + i);
    const int e = errno;
    fprintf(stderr, "adsm-run: cannot run %s: %s\n", argv[i], strerror(e));
    leave(e == ENOENT ? 127 : 126);
}
