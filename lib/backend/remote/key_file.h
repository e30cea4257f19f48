// The shared key of a remote device's server and its clients
// (ADSM_REMOTE_KEY, adsm-device-server --key): a file only its owner may
// read or write, holding at least 16 bytes (trailing whitespace is not part
// of the key, so `head -c 32 /dev/urandom | base64 > key` works).
#pragma once

#include <string>

#include "support/status.h"

namespace adsm::remote {

constexpr size_t kMinKeyBytes = 16;
constexpr size_t kMaxKeyBytes = 4096;

// Reads the key, refusing a file that others can read or write, a link, a
// key too short or too long, with a message naming the file and the fix.
Status load_key(const char *path, std::string *key);

}  // namespace adsm::remote
