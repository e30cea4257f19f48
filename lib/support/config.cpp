#include "support/config.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace adsm {

const std::vector<ConfigVar> &config_variables() {
    static const std::vector<ConfigVar> vars = {
        {"ADSM_DEVICE", "sim|cpu|cuda|levelzero|remote[,...]",
         "accelerator back-end: simulated GPU, in-process CPU, an NVIDIA GPU, a Level Zero GPU, or a device served by "
         "adsm-device-server on another machine (ADSM_REMOTE); "
         "a comma-separated list gives the process several devices, numbered from 0 (default sim)"},
        {"ADSM_REMOTE", "HOST:PORT", "remote: where adsm-device-server listens"},
        {"ADSM_REMOTE_KEY", "FILE", "remote: the key shared with the server (a file only its owner may read)"},
        {"ADSM_REMOTE_TIMEOUT", "SECONDS",
         "remote: an operation the server does not answer within this time loses the device (default 5; a sync "
         "waits for kernels as long as the server's heartbeats come, four per timeout)"},
        {"ADSM_REMOTE_SPIN_US", "us|auto",
         "remote: how long each wait for the server (an answer, a transfer's completion) keeps looking before it "
         "sleeps: an answer within it costs no wake-up, at up to this much CPU per wait (0: sleep at once; default "
         "auto: 100 on a machine of 4 CPUs or more, else 0)"},
        {"ADSM_REMOTE_PROVIDER", "NAME", "remote: the libfabric provider (default tcp)"},
        {"ADSM_VISIBLE_DEVICES", "N[,...]",
         "only these devices of the ADSM_DEVICE list, renumbered from 0 in this order (default: all)"},
        {"ADSM_PROTOCOL", "batch|lazy|rolling|delta", "coherence protocol (default delta)"},
        {"ADSM_BLOCK_SIZE", "SIZE", "coherence block size, a multiple of the page size (default 256K)"},
        {"ADSM_ROLLING_SIZE", "N", "dirty blocks the rolling protocol keeps before evicting (default 8, at least 2)"},
        {"ADSM_READ_AHEAD", "SIZE",
         "most bytes fetched ahead in the background once the CPU faults on blocks of an object one after "
         "another; the window doubles from 1M (or a block) as the CPU keeps on (0: none; default 8M)"},
        {"ADSM_SIM_MEMORY", "SIZE", "memory of the simulated accelerator (default 16G)"},
        {"ADSM_SIM_LINK_GBPS", "GB/s", "simulated link bandwidth; 0 copies at memory speed (default 0)"},
        {"ADSM_SIM_LINK_LATENCY_US", "us", "simulated latency per transfer (default 0)"},
        {"ADSM_SIM_LAUNCH_US", "us",
         "simulated kernel launch latency: a sync returns no sooner than this after the launch (default 0; 9.7 "
         "models an H100)"},
        {"ADSM_SIM_PIN_US_PER_MIB", "us",
         "sim: time charged per MiB of host mirror pinned, at the moments the cuda back-end pins it (a 2 MiB "
         "piece's allocated pages at the CPU's first fault in it, or else at the first copy through it); pins nothing "
         "(default 0; 75 models an H100's host)"},
        {"ADSM_SIM_SYNC_COPY_US", "us",
         "simulated least time of a synchronous copy, call to return (default 0; 9.8 models an H100's pinned "
         "copy, where an asynchronous one costs 2.7)"},
        {"ADSM_CUDA_PIN", "lazy|eager|off",
         "cuda: when the host mirror's pages are pinned for the copy engine: at first use (a 2 MiB granule's at the "
         "CPU's first fault in it, or else at its first copy), at allocation, or never (pageable copies, about a "
         "sixth of the speed; I/O staging stays pageable too) (default lazy)"},
        {"ADSM_CUDA_PIN_THREADS", "N",
         "cuda: threads that make the pages of a first use of two or more 2 MiB pieces of the mirror before they "
         "are pinned, where making a page costs more than pinning it (1: the pinning thread makes them; default: "
         "half the CPUs, at most 8)"},
        {"ADSM_GPU_FAULT_CALLS", "helpers|direct",
         "cuda and levelzero: the driver calls a CPU fault needs are made by helper threads while the faulting "
         "thread sleeps (no driver is async-signal-safe), or by the fault handler itself, a context switch "
         "cheaper and unsafe if the program faults inside the driver or the allocator (default helpers)"},
        {"ADSM_SIM_WORKERS", "N", "threads that run kernels on sim and cpu (default: one per CPU)"},
        {"ADSM_DIRTY_TRACKING", "auto|uffd|mprotect",
         "how writes to shared memory are found: userfaultfd without signals, or protection faults (default auto: "
         "faults where the device's link moves a page faster than the kernel tracks a write, as on a GPU, else "
         "userfaultfd where the kernel has it)"},
        {"ADSM_ON_RACE", "sync|warn|abort",
         "CPU access to data a kernel may be using: wait for it, warn, or abort (default sync, warning once)"},
        {"ADSM_MALLOC_THRESHOLD", "SIZE|off",
         "preloaded: malloc and friends of at least this many bytes return shared memory (default 1M when "
         "preloaded, off when linked or on the cuda device)"},
        {"ADSM_MALLOC_KEEP", "SIZE",
         "freed shared blocks of the malloc family kept, pages and device memory, for the next malloc of about "
         "their size, as the C library keeps freed memory warm; up to 8 blocks (0: none, every freed block's "
         "addresses stay unused a while so that a stale pointer faults; default 64M)"},
        {"ADSM_GPU_APIS", "auto|on|off",
         "preloaded: route the program's CUDA and Level Zero calls through the runtime (managed memory is shared "
         "memory, a launch releases and runs the program's own kernel on cuda and levelzero, else the kernel "
         "registered under the same name, a synchronisation waits and acquires); auto routes an API only when "
         "ADSM_DEVICE is its back-end (default auto)"},
        {"ADSM_SPILL", "host|evict|fail|next|split",
         "a shared allocation that finds its device full: waits on the host for the call that needs it, evicts idle "
         "objects (lower priority first) to take their place, fails, becomes host-resident memory that kernels "
         "reach over the link (next), or is split in equal parts over its device, the other devices and host memory "
         "(split; default host)"},
        {"ADSM_CHAOS_RELEASE_EVERY", "N",
         "force a release and acquire of every context (batch: the calling thread's) at about one interposed call in "
         "N (default 0: off)"},
        {"ADSM_CHAOS_SEED", "N", "seed of the chaos mode's choices (default 1)"},
        {"ADSM_STATS", "0|1|json:FILE",
         "the runtime's statistics at exit: a table on stderr, or JSON written to FILE (%p in FILE: the process id)"},
        {"ADSM_TRACE", "FILE",
         "write a Chrome trace-event timeline (Perfetto, chrome://tracing) of kernels, transfers, faults, I/O and "
         "syncs to FILE at exit (%p in FILE: the process id)"},
        {"ADSM_PROFILE", "0|1|N",
         "at exit, print the N (1: 20) code locations of the program that caused the most faults and transferred "
         "bytes"},
        {"ADSM_LOG", "error|warn|info|debug", "diagnostic verbosity (default warn)"},
        {"ADSM_VA_BASE", "ADDRESS", "preferred start of the shared address window (default 0x300000000000)"},
        {"ADSM_VA_SIZE", "SIZE", "size of the shared address window (default: 4x the devices' memory, at least 64G)"},
        {"ADSM_GC", "auto|off", "the collector collects when allocation calls for it, or only in adsmGcCollect (default auto)"},
        {"ADSM_GC_MAX_HEAP", "SIZE", "the collected heap never grows past this; allocation then returns NULL (default: the window)"},
        {"ADSM_GC_TRIGGER", "SIZE", "bytes allocated between collections, at least (default 8M)"},
        {"ADSM_GC_GROWTH", "X",
         "bytes allocated between collections, at least X times what the last one found live (default 1)"},
        {"ADSM_GC_MARKERS", "N",
         "threads that mark in parallel (default: one per CPU, at most 8), named adsm-marker, on the CPUs of all the "
         "program's threads together (a program that pins each thread to a CPU still marks on all of them)"},
        {"ADSM_GC_GENERATIONAL", "auto|on|off",
         "minor collections that rescan only what was written since the last collection, found by the kernel's "
         "write tracking (Linux 6.7+); on fails where it is missing (default auto)"},
        {"ADSM_GC_FULL_EVERY", "N", "with minor collections, every Nth collection is a full one (default 8)"},
        {"ADSM_GC_CONCURRENT", "auto|off",
         "full collections mark while the program runs and stop it only to start and finish, where minor "
         "collections work and there are two markers or more (default auto)"},
    };
    return vars;
}

std::string file_for_process(const std::string &pattern) {
    std::string out;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
            out += std::to_string(getpid());
            ++i;
        } else {
            out += pattern[i];
        }
    }
    return out;
}

bool parse_uint(const char *text, uint64_t *out) {
    if (!text || !*text || *text == '-' || *text == '+') return false;
    errno = 0;
    char *end = nullptr;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno != 0 || end == text || *end != '\0') return false;
    *out = v;
    return true;
}

bool parse_size(const char *text, uint64_t *out) {
    if (!text || !*text || *text == '-' || *text == '+') return false;
    errno = 0;
    char *end = nullptr;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || end == text) return false;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    case 't': case 'T': shift = 40; ++end; break;
    default: return false;
    }
    if (*end == 'i' && shift) ++end;       // accept KiB-style suffixes
    if ((*end == 'B' || *end == 'b') && shift) ++end;
    if (*end != '\0') return false;
    if (shift && v > (~0ull >> shift)) return false;
    *out = static_cast<uint64_t>(v) << shift;
    return true;
}

bool parse_number(const char *text, double *out) {
    if (!text || !*text) return false;
    errno = 0;
    char *end = nullptr;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !std::isfinite(v) || v < 0) return false;
    *out = v;
    return true;
}

bool malloc_threshold_from(const char *value, bool preloaded, const char *device, uint64_t *out) {
    if (!value || !*value) {
        bool gpu = device && !strcmp(device, "cuda");
        *out = preloaded && !gpu ? (1u << 20) : UINT64_MAX;
        return true;
    }
    if (!strcmp(value, "off")) {
        *out = UINT64_MAX;
        return true;
    }
    uint64_t v;
    if (!parse_size(value, &v) || v == 0) return false;
    *out = v;
    return true;
}

namespace {
Status bad(const char *var, const char *value, const char *expected) {
    return fail(adsmErrorInitialization, "%s='%s' is not valid: expected %s", var, value, expected);
}
constexpr size_t kMaxDevices = 16;

std::vector<std::string> split_commas(const char *v) {
    std::vector<std::string> out;
    std::string item;
    for (const char *p = v;; ++p) {
        if (*p == ',' || !*p) {
            out.push_back(item);
            item.clear();
            if (!*p) break;
        } else if (*p != ' ') {
            item += *p;
        }
    }
    return out;
}

// ADSM_DEVICE and ADSM_VISIBLE_DEVICES.  Whether each name is a back-end
// this build has is for the device registry to say.
Status parse_devices(const char *list, const char *visible, Config *c) {
    if (list && *list) {
        std::vector<std::string> names = split_commas(list);
        for (const std::string &n : names)
            if (n.empty()) return bad("ADSM_DEVICE", list, "back-end names separated by commas, such as sim or sim,sim");
        if (names.size() > kMaxDevices) return bad("ADSM_DEVICE", list, "at most 16 devices");
        c->devices = names;
    }
    if (visible && *visible) {
        std::vector<std::string> picked;
        std::vector<bool> seen(c->devices.size());
        for (const std::string &n : split_commas(visible)) {
            uint64_t i;
            if (!parse_uint(n.c_str(), &i))
                return bad("ADSM_VISIBLE_DEVICES", visible, "device numbers separated by commas, such as 1 or 0,2");
            if (i >= c->devices.size())
                return fail(adsmErrorInitialization,
                            "ADSM_VISIBLE_DEVICES='%s' names device %llu, but ADSM_DEVICE lists %zu device%s (0 to %zu)",
                            visible, static_cast<unsigned long long>(i), c->devices.size(),
                            c->devices.size() == 1 ? "" : "s", c->devices.size() - 1);
            if (seen[i]) return bad("ADSM_VISIBLE_DEVICES", visible, "each device at most once");
            seen[i] = true;
            picked.push_back(c->devices[i]);
        }
        c->devices = picked;
    }
    c->device = c->devices.front();
    return adsmSuccess;
}

}  // namespace

Status parse_config(const EnvLookup &lookup, Config *out) {
    Config c;
    const long page = 4096;
    if (Status s = parse_devices(lookup("ADSM_DEVICE"), lookup("ADSM_VISIBLE_DEVICES"), &c); s != adsmSuccess) return s;
    if (const char *v = lookup("ADSM_PROTOCOL"); v && *v) c.protocol = v;
    if (const char *v = lookup("ADSM_BLOCK_SIZE"); v && *v) {
        uint64_t s;
        if (!parse_size(v, &s) || s == 0 || s % page != 0 || s > (1ull << 30))
            return bad("ADSM_BLOCK_SIZE", v, "a multiple of 4K up to 1G, such as 64K or 1M");
        c.block_size = s;
    }
    if (const char *v = lookup("ADSM_ROLLING_SIZE"); v && *v) {
        uint64_t n;
        // One store can straddle two blocks: with room for one only, each of
        // its faults would evict the other block, forever.
        if (!parse_uint(v, &n) || n < 2 || n > (1u << 20))
            return bad("ADSM_ROLLING_SIZE", v, "a whole number from 2 to 1048576 (a store can straddle two blocks)");
        c.rolling_size = n;
    }
    if (const char *v = lookup("ADSM_READ_AHEAD"); v && *v) {
        uint64_t s;
        if (!parse_size(v, &s) || s > (1ull << 32)) return bad("ADSM_READ_AHEAD", v, "a size up to 4G, such as 0 or 16M");
        c.read_ahead = s;
    }
    if (const char *v = lookup("ADSM_SIM_MEMORY"); v && *v) {
        uint64_t s;
        if (!parse_size(v, &s) || s < (1u << 20) || s > (1ull << 42))
            return bad("ADSM_SIM_MEMORY", v, "a size from 1M to 4T, such as 512M or 8G");
        c.sim_memory = s;
    }
    if (const char *v = lookup("ADSM_SIM_LINK_GBPS"); v && *v) {
        if (!parse_number(v, &c.link_gbps)) return bad("ADSM_SIM_LINK_GBPS", v, "a number of GB/s >= 0");
    }
    if (const char *v = lookup("ADSM_SIM_LINK_LATENCY_US"); v && *v) {
        if (!parse_number(v, &c.link_latency_us) || c.link_latency_us > 1e7)
            return bad("ADSM_SIM_LINK_LATENCY_US", v, "microseconds from 0 to 10000000");
    }
    if (const char *v = lookup("ADSM_SIM_LAUNCH_US"); v && *v) {
        if (!parse_number(v, &c.launch_us) || c.launch_us > 1e7)
            return bad("ADSM_SIM_LAUNCH_US", v, "microseconds from 0 to 10000000");
    }
    if (const char *v = lookup("ADSM_SIM_SYNC_COPY_US"); v && *v) {
        if (!parse_number(v, &c.sync_copy_us) || c.sync_copy_us > 1e7)
            return bad("ADSM_SIM_SYNC_COPY_US", v, "microseconds from 0 to 10000000");
    }
    if (const char *v = lookup("ADSM_SIM_PIN_US_PER_MIB"); v && *v) {
        if (!parse_number(v, &c.sim_pin_us_per_mib) || c.sim_pin_us_per_mib > 1e6)
            return bad("ADSM_SIM_PIN_US_PER_MIB", v, "microseconds from 0 to 1000000");
    }
    if (const char *v = lookup("ADSM_SIM_WORKERS"); v && *v) {
        uint64_t n;
        if (!parse_uint(v, &n) || n == 0 || n > 1024) return bad("ADSM_SIM_WORKERS", v, "a whole number from 1 to 1024");
        c.sim_workers = static_cast<unsigned>(n);
    }
    if (const char *v = lookup("ADSM_DIRTY_TRACKING"); v && *v) {
        if (strcmp(v, "auto") && strcmp(v, "uffd") && strcmp(v, "mprotect"))
            return bad("ADSM_DIRTY_TRACKING", v, "auto, uffd or mprotect");
        c.dirty_tracking = v;
    }
    if (const char *v = lookup("ADSM_REMOTE"); v && *v) {
        const char *colon = strrchr(v, ':');
        uint64_t port;
        if (!colon || colon == v || !parse_uint(colon + 1, &port) || port == 0 || port > 65535)
            return bad("ADSM_REMOTE", v, "HOST:PORT");
        c.remote = v;
    }
    if (const char *v = lookup("ADSM_REMOTE_KEY"); v && *v) c.remote_key = v;  // checked when it is read
    if (const char *v = lookup("ADSM_REMOTE_PROVIDER"); v && *v) {
        for (const char *p = v; *p; ++p)
            if (!isalnum(static_cast<unsigned char>(*p)) && *p != '_' && *p != ';' && *p != '-')
                return bad("ADSM_REMOTE_PROVIDER", v, "a libfabric provider name, such as tcp or verbs;ofi_rxm");
        c.remote_provider = v;
    }
    if (const char *v = lookup("ADSM_REMOTE_TIMEOUT"); v && *v) {
        char *end;
        double t = strtod(v, &end);
        if (*end || !(t > 0) || t > 3600) return bad("ADSM_REMOTE_TIMEOUT", v, "seconds, more than 0 and at most 3600");
        c.remote_timeout_s = t;
    }
    if (const char *v = lookup("ADSM_REMOTE_SPIN_US"); v && *v) {
        uint64_t n = 0;
        if (!strcmp(v, "auto")) c.remote_spin_us = -1;
        else if (!parse_uint(v, &n) || n > 100000)
            return bad("ADSM_REMOTE_SPIN_US", v, "microseconds, from 0 to 100000, or auto");
        else c.remote_spin_us = static_cast<int>(n);
    }
    if (const char *v = lookup("ADSM_CUDA_PIN"); v && *v) {
        if (strcmp(v, "lazy") && strcmp(v, "eager") && strcmp(v, "off")) return bad("ADSM_CUDA_PIN", v, "lazy, eager or off");
        c.cuda_pin = v;
    }
    if (const char *v = lookup("ADSM_CUDA_PIN_THREADS"); v && *v) {
        uint64_t n = 0;
        if (!parse_uint(v, &n) || n == 0 || n > 64) return bad("ADSM_CUDA_PIN_THREADS", v, "a whole number from 1 to 64");
        c.cuda_pin_threads = static_cast<unsigned>(n);
    }
    if (const char *v = lookup("ADSM_GPU_FAULT_CALLS"); v && *v) {
        if (strcmp(v, "helpers") && strcmp(v, "direct")) return bad("ADSM_GPU_FAULT_CALLS", v, "helpers or direct");
        c.gpu_fault_calls = v;
    }
    if (const char *v = lookup("ADSM_SPILL"); v && *v) {
        if (strcmp(v, "host") && strcmp(v, "evict") && strcmp(v, "fail") && strcmp(v, "next") && strcmp(v, "split"))
            return bad("ADSM_SPILL", v, "host, evict, fail, next or split");
        c.spill = v;
    }
    if (const char *v = lookup("ADSM_ON_RACE"); v && *v) {
        if (strcmp(v, "sync") && strcmp(v, "warn") && strcmp(v, "abort"))
            return bad("ADSM_ON_RACE", v, "sync, warn or abort");
        c.on_race = v;
    }
    if (const char *v = lookup("ADSM_MALLOC_THRESHOLD"); v && *v) {
        if (!malloc_threshold_from(v, false, nullptr, &c.malloc_threshold))
            return bad("ADSM_MALLOC_THRESHOLD", v, "a size of at least 1 byte, such as 64K, or off");
    }
    if (const char *v = lookup("ADSM_MALLOC_KEEP"); v && *v) {
        uint64_t s;
        if (!parse_size(v, &s) || s > (1ull << 40)) return bad("ADSM_MALLOC_KEEP", v, "a size up to 1T, such as 0 or 256M");
        c.malloc_keep = s;
    }
    if (const char *v = lookup("ADSM_GPU_APIS"); v && *v) {
        if (strcmp(v, "auto") && strcmp(v, "on") && strcmp(v, "off")) return bad("ADSM_GPU_APIS", v, "auto, on or off");
        c.gpu_apis = v;
    }
    if (const char *v = lookup("ADSM_CHAOS_RELEASE_EVERY"); v && *v) {
        if (!parse_uint(v, &c.chaos_every)) return bad("ADSM_CHAOS_RELEASE_EVERY", v, "a whole number (0 is off)");
    }
    if (const char *v = lookup("ADSM_CHAOS_SEED"); v && *v) {
        if (!parse_uint(v, &c.chaos_seed)) return bad("ADSM_CHAOS_SEED", v, "a whole number");
    }
    if (const char *v = lookup("ADSM_STATS"); v && *v) {
        if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true")) c.stats = true;
        else if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false")) c.stats = false;
        else if (!strncmp(v, "json:", 5) && v[5]) c.stats = true, c.stats_json = v + 5;
        else return bad("ADSM_STATS", v, "0, 1 or json:FILE");
    }
    if (const char *v = lookup("ADSM_TRACE"); v && *v) c.trace_file = v;
    if (const char *v = lookup("ADSM_PROFILE"); v && *v) {
        uint64_t n;
        if (!strcmp(v, "yes") || !strcmp(v, "true")) n = 1;
        else if (!strcmp(v, "no") || !strcmp(v, "false")) n = 0;
        else if (!parse_uint(v, &n) || n > 10000) return bad("ADSM_PROFILE", v, "0, 1 or a number of rows up to 10000");
        c.profile_top = n == 1 ? 20 : static_cast<unsigned>(n);
    }
    if (const char *v = lookup("ADSM_LOG"); v && *v) {
        if (!strcmp(v, "error")) c.log_level = LogLevel::error;
        else if (!strcmp(v, "warn")) c.log_level = LogLevel::warn;
        else if (!strcmp(v, "info")) c.log_level = LogLevel::info;
        else if (!strcmp(v, "debug")) c.log_level = LogLevel::debug;
        else return bad("ADSM_LOG", v, "error, warn, info or debug");
    }
    if (const char *v = lookup("ADSM_VA_BASE"); v && *v) {
        uint64_t a;
        if (!parse_uint(v, &a) || a % (1u << 21) != 0 || a < (1ull << 32) || a >= (1ull << 47))
            return bad("ADSM_VA_BASE", v, "a 2M-aligned address between 4G and 128T, such as 0x300000000000");
        c.va_base = a;
    }
    if (const char *v = lookup("ADSM_VA_SIZE"); v && *v) {
        uint64_t s;
        if (!parse_size(v, &s) || s < (64u << 20) || s > (1ull << 44) || s % (1u << 21) != 0)
            return bad("ADSM_VA_SIZE", v, "a multiple of 2M from 64M to 16T");
        c.va_size = s;
    }
    if (const char *v = lookup("ADSM_GC"); v && *v) {
        if (strcmp(v, "auto") && strcmp(v, "off")) return bad("ADSM_GC", v, "auto or off");
        c.gc_auto = !strcmp(v, "auto");
    }
    if (const char *v = lookup("ADSM_GC_MAX_HEAP"); v && *v) {
        if (!parse_size(v, &c.gc_max_heap) || c.gc_max_heap < (2u << 20))
            return bad("ADSM_GC_MAX_HEAP", v, "a size of at least 2M");
    }
    if (const char *v = lookup("ADSM_GC_TRIGGER"); v && *v) {
        if (!parse_size(v, &c.gc_trigger) || c.gc_trigger < 4096) return bad("ADSM_GC_TRIGGER", v, "a size of at least 4K");
    }
    if (const char *v = lookup("ADSM_GC_GROWTH"); v && *v) {
        if (!parse_number(v, &c.gc_growth) || c.gc_growth > 100) return bad("ADSM_GC_GROWTH", v, "a number from 0 to 100");
    }
    if (const char *v = lookup("ADSM_GC_MARKERS"); v && *v) {
        uint64_t n;
        if (!parse_uint(v, &n) || n == 0 || n > 64) return bad("ADSM_GC_MARKERS", v, "a whole number from 1 to 64");
        c.gc_markers = static_cast<unsigned>(n);
    }
    if (const char *v = lookup("ADSM_GC_GENERATIONAL"); v && *v) {
        if (strcmp(v, "auto") && strcmp(v, "on") && strcmp(v, "off")) return bad("ADSM_GC_GENERATIONAL", v, "auto, on or off");
        c.gc_generational = v;
    }
    if (const char *v = lookup("ADSM_GC_FULL_EVERY"); v && *v) {
        uint64_t n;
        if (!parse_uint(v, &n) || n == 0 || n > 1000000) return bad("ADSM_GC_FULL_EVERY", v, "a whole number from 1 to 1000000");
        c.gc_full_every = static_cast<unsigned>(n);
    }
    if (const char *v = lookup("ADSM_GC_CONCURRENT"); v && *v) {
        if (strcmp(v, "auto") && strcmp(v, "off")) return bad("ADSM_GC_CONCURRENT", v, "auto or off");
        c.gc_concurrent = !strcmp(v, "auto");
    }
    *out = c;
    return adsmSuccess;
}

}  // namespace adsm
