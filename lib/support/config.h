// The runtime's settings, read once from ADSM_* environment variables.
// Every value is validated; a bad one fails initialisation with a message
// that names the variable, the value and what was expected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "support/log.h"
#include "support/status.h"

namespace adsm {

struct Config {
    std::string device = "sim";         // ADSM_DEVICE: the first device's back-end
    // ADSM_DEVICE as a list ("sim,sim"), less what ADSM_VISIBLE_DEVICES hides:
    // one back-end name per device of the process, device 0 first.
    std::vector<std::string> devices{"sim"};
    std::string protocol = "delta";     // ADSM_PROTOCOL
    size_t block_size = 256 * 1024;     // ADSM_BLOCK_SIZE
    size_t rolling_size = 8;            // ADSM_ROLLING_SIZE: dirty blocks kept before eviction
    uint64_t read_ahead = 8ull << 20;   // ADSM_READ_AHEAD: most bytes fetched ahead of sequential faults (0: none)
    uint64_t sim_memory = 16ull << 30;  // ADSM_SIM_MEMORY: device capacity
    double link_gbps = 0;               // ADSM_SIM_LINK_GBPS: 0 means memcpy speed
    double link_latency_us = 0;         // ADSM_SIM_LINK_LATENCY_US
    double launch_us = 0;               // ADSM_SIM_LAUNCH_US: shortest launch-to-completion of a kernel
    double sync_copy_us = 0;            // ADSM_SIM_SYNC_COPY_US: shortest synchronous copy, start to finish
    double sim_pin_us_per_mib = 0;      // ADSM_SIM_PIN_US_PER_MIB: modelled cost of pinning mirror pages at first use
    unsigned sim_workers = 0;           // ADSM_SIM_WORKERS: 0 means one per CPU
    bool stats = false;                 // ADSM_STATS: a table on stderr at exit
    std::string stats_json;             // ADSM_STATS=json:FILE: JSON into FILE instead
    std::string trace_file;             // ADSM_TRACE: Chrome trace-event file written at exit
    unsigned profile_top = 0;           // ADSM_PROFILE: rows of the fault attribution table (0: off)
    LogLevel log_level = LogLevel::warn;  // ADSM_LOG
    std::string dirty_tracking = "auto";  // ADSM_DIRTY_TRACKING: auto|uffd|mprotect
    std::string on_race = "sync";       // ADSM_ON_RACE: sync|warn|abort
    uint64_t malloc_threshold = UINT64_MAX;  // ADSM_MALLOC_THRESHOLD (see malloc_threshold_from_env)
    uint64_t malloc_keep = 64ull << 20;  // ADSM_MALLOC_KEEP: bytes of freed malloc blocks kept for reuse (0: none)
    std::string gpu_apis = "auto";      // ADSM_GPU_APIS: auto|on|off
    std::string remote;                 // ADSM_REMOTE: HOST:PORT of the device server
    std::string remote_key;             // ADSM_REMOTE_KEY: the shared key's file
    double remote_timeout_s = 5;        // ADSM_REMOTE_TIMEOUT: an unanswered server is lost after this
    int remote_spin_us = -1;            // ADSM_REMOTE_SPIN_US: each wait on the connection looks this long before it sleeps (-1: auto)
    std::string remote_provider = "tcp";  // ADSM_REMOTE_PROVIDER: the libfabric provider
    std::string cuda_pin = "lazy";      // ADSM_CUDA_PIN: lazy|eager|off (when the cuda device pins mirror pages)
    unsigned cuda_pin_threads = 0;      // ADSM_CUDA_PIN_THREADS: threads making the pages of a first use before pinning (0: auto)
    // ADSM_GPU_FAULT_CALLS: helpers|direct (who makes the driver calls a
    // fault needs on cuda and levelzero, gpu/handler_calls.h)
    std::string gpu_fault_calls = "helpers";
    std::string spill = "host";         // ADSM_SPILL: host|evict|fail|next|split (a new object that finds its device full)
    uint64_t chaos_every = 0;           // ADSM_CHAOS_RELEASE_EVERY: 0 is off
    uint64_t chaos_seed = 1;            // ADSM_CHAOS_SEED
    uintptr_t va_base = 0x300000000000ull;  // ADSM_VA_BASE: preferred start of the shared window
    uint64_t va_size = 0;               // ADSM_VA_SIZE: 0 means derived from the device capacity
    bool gc_auto = true;                // ADSM_GC: auto|off
    uint64_t gc_max_heap = 0;           // ADSM_GC_MAX_HEAP: 0 means the window
    uint64_t gc_trigger = 8ull << 20;   // ADSM_GC_TRIGGER
    double gc_growth = 1.0;             // ADSM_GC_GROWTH
    unsigned gc_markers = 0;            // ADSM_GC_MARKERS: 0 means one per CPU, at most 8
    std::string gc_generational = "auto";  // ADSM_GC_GENERATIONAL: auto|on|off
    unsigned gc_full_every = 8;         // ADSM_GC_FULL_EVERY
    bool gc_concurrent = true;          // ADSM_GC_CONCURRENT: auto|off
};

// One documented variable; the launcher's --help prints this table.
struct ConfigVar {
    const char *name;
    const char *values;
    const char *help;
};
const std::vector<ConfigVar> &config_variables();

using EnvLookup = std::function<const char *(const char *)>;

// Parses the variables through `lookup` (getenv in production).
Status parse_config(const EnvLookup &lookup, Config *out);

// ADSM_MALLOC_THRESHOLD as a number of bytes: a size, or "off"; unset, the
// default is 1 MiB when preloaded and off when linked (a program that links
// adsm for its API keeps its own mallocs private unless it asks), and off on
// the cuda device (`device`, ADSM_DEVICE): a GPU without system-allocated
// memory runs no program that hands malloc'd memory to kernels, while a
// program that copies from malloc'd buffers should pass through untouched.
// UINT64_MAX means off.  Returns false for a malformed value.
bool malloc_threshold_from(const char *value, bool preloaded, const char *device, uint64_t *out);

// Set by adsm-run to the id of the process it launches (exec keeps it), so
// that this process alone says at exit that it has no statistics to print,
// not every program it starts in turn.
constexpr const char *kLaunchedPidVariable = "ADSM_RUN_PID";

// A file name from a variable with "%p" replaced by the process id, so that
// programs that start others under the preload get one file each.
std::string file_for_process(const std::string &pattern);

// Strict scalar parsers, exposed for the launcher and tests.
bool parse_size(const char *text, uint64_t *out);      // 4096, 64K, 256M, 16G, 1T
bool parse_number(const char *text, double *out);      // finite, >= 0
bool parse_uint(const char *text, uint64_t *out);      // decimal or 0x hex

}  // namespace adsm
