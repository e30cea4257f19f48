// adsm-device-server's command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace adsm::server {

struct Options {
    std::string address = "0.0.0.0";
    std::string port = "7411";
    std::string provider = "tcp";
    std::string device = "sim";        // the back-end each client gets
    uint64_t memory = 4ull << 30;      // device memory per client
    std::vector<std::string> kernels;  // libraries whose constructors register kernels
    std::vector<std::string> modules;  // GPU code (cubin, fatbin, PTX) for cuda
    bool worker = false;               // this process serves one client's device (worker.h)
    std::string key;                   // the key file
    unsigned max_clients = 16;
    int spin_us = -1;                  // each wait for a client looks this long before it sleeps (-1: auto)
    int handshake_timeout_ms = 5000;
};

// Fills *out from argv; false with a message in *error (empty for --help,
// with the usage in *usage).
bool parse_options(int argc, char **argv, Options *out, std::string *error, bool *help);
const char *usage();

}  // namespace adsm::server
