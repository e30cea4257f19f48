#include "os/loaded_objects.h"

#include <dlfcn.h>
#include <link.h>

namespace adsm::os {
namespace {

// (_dl_find_object: the C library's lock-free lookup of the object by
// address ranges, made for unwinders.)
const struct link_map *map_of(const void *addr) {
    struct dl_find_object found;
    if (!addr || _dl_find_object(const_cast<void *>(addr), &found) != 0) return nullptr;
    return found.dlfo_link_map;
}

}  // namespace

const void *object_of(const void *addr) { return map_of(addr); }

const char *object_file(const void *addr) {
    const struct link_map *m = map_of(addr);
    return m ? m->l_name : nullptr;
}

}  // namespace adsm::os
