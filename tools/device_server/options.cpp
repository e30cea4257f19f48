#include "device_server/options.h"

#include <cstring>

#include "support/config.h"

namespace adsm::server {

const char *usage() {
    return "usage: adsm-device-server --key FILE [options]\n"
           "Serves an accelerator to adsm programs on other machines (ADSM_DEVICE=remote).\n"
           "\n"
           "  --key FILE          the shared key (required); only its owner may read it (chmod 600)\n"
           "  --address ADDR      where to listen (default 0.0.0.0: every interface)\n"
           "  --port PORT         (default 7411; 0 picks a free one, printed at start)\n"
           "  --provider NAME     the libfabric provider (default tcp; any with connected endpoints and RMA)\n"
           "  --device KIND       the back-end each client gets, a device of its own:\n"
           "                      sim (default), cpu (kernels on this machine's cores), cuda or\n"
           "                      levelzero (the first GPU; each client's memory and kernels in a\n"
           "                      process of its own, the GPU's memory shared among them)\n"
           "  --memory SIZE       device memory per client, as 512M or 4G (default 4G)\n"
           "  --kernels LIB.so    a library whose constructors register kernels by name with\n"
           "                      adsmRegisterKernel (repeatable): sim and cpu run these\n"
           "  --modules FILE      GPU code (cubin, fatbin or PTX for cuda; SPIR-V for levelzero)\n"
           "                      whose kernels run by the names clients register (repeatable);\n"
           "                      clients may load their own modules too (adsmLoadModule)\n"
           "  --max-clients N     clients served at once (default 16)\n"
           "  --spin-us US|auto   how long each wait for a client's next message keeps looking\n"
           "                      before it sleeps: a request within it costs no wake-up, at up\n"
           "                      to that much CPU per wait (0: sleep at once; default auto:\n"
           "                      100 on a machine of 4 CPUs or more, else 0)\n"
           "  --help              this text\n"
           "\n"
           "Prints 'listening on ADDR:PORT' once it accepts clients; stops on SIGINT or SIGTERM.\n";
}

bool parse_options(int argc, char **argv, Options *out, std::string *error, bool *help) {
    *help = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            *help = true;
            return true;
        }
        if (a == "--worker") {  // started by the server itself (worker_hosting.h)
            out->worker = true;
            continue;
        }
        std::string value;
        if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = a.substr(eq + 1);
            a = a.substr(0, eq);
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            *error = a + " needs a value";
            return false;
        }
        if (a == "--key") {
            out->key = value;
        } else if (a == "--address") {
            out->address = value;
        } else if (a == "--port") {
            char *end;
            unsigned long p = strtoul(value.c_str(), &end, 10);
            if (value.empty() || *end || p > 65535) {
                *error = "--port " + value + ": not a port number";
                return false;
            }
            out->port = value;
        } else if (a == "--provider") {
            out->provider = value;
        } else if (a == "--device") {
            if (value != "sim" && value != "cpu" && value != "cuda" && value != "levelzero") {
                *error = "--device " + value + ": expected sim, cpu, cuda or levelzero";
                return false;
            }
            out->device = value;
        } else if (a == "--memory") {
            if (!parse_size(value.c_str(), &out->memory) || out->memory < (1u << 20)) {
                *error = "--memory " + value + ": a size of at least 1M, as 512M or 4G";
                return false;
            }
        } else if (a == "--kernels") {
            out->kernels.push_back(value);
        } else if (a == "--modules") {
            out->modules.push_back(value);
        } else if (a == "--max-clients") {
            char *end;
            unsigned long n = strtoul(value.c_str(), &end, 10);
            if (value.empty() || *end || n == 0 || n > 4096) {
                *error = "--max-clients " + value + ": a number from 1 to 4096";
                return false;
            }
            out->max_clients = static_cast<unsigned>(n);
        } else if (a == "--spin-us") {
            char *end;
            unsigned long n = strtoul(value.c_str(), &end, 10);
            if (value == "auto") {
                out->spin_us = -1;
            } else if (value.empty() || *end || value[0] == '-' || n > 100000) {
                *error = "--spin-us " + value + ": microseconds, from 0 to 100000, or auto";
                return false;
            } else {
                out->spin_us = static_cast<int>(n);
            }
        } else {
            *error = "unknown option " + a;
            return false;
        }
    }
    const bool gpu = out->device == "cuda" || out->device == "levelzero";
    if (!out->modules.empty() && !gpu) {
        *error = "--modules: only cuda and levelzero run GPU code (--device " + out->device +
                 " runs --kernels libraries)";
        return false;
    }
    if (out->key.empty() && !out->worker) {
        *error = "--key FILE is required: clients prove they hold the same key";
        return false;
    }
    return true;
}

}  // namespace adsm::server
