#include "support/module_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/error_text.h"

namespace adsm {
namespace {
// Larger images are surely not modules (a fatbin for every architecture is
// a few MiB); refusing them keeps a wrong path from reading a huge file.
constexpr size_t kMaxImage = 1ull << 30;
}  // namespace

Status read_module_file(const char *path, std::vector<char> *image) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(adsmErrorInvalidValue, "cannot open module %s: %s", path, os::error_text(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || static_cast<size_t>(st.st_size) > kMaxImage) {
        close(fd);
        return fail(adsmErrorInvalidValue, "%s is not a module file (a regular file of at most 1 GiB)", path);
    }
    image->assign(static_cast<size_t>(st.st_size) + 1, '\0');
    size_t got = 0;
    while (got < static_cast<size_t>(st.st_size)) {
        ssize_t n = read(fd, image->data() + got, static_cast<size_t>(st.st_size) - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            return fail(adsmErrorInvalidValue, "cannot read module %s: %s", path, os::error_text(e));
        }
        got += static_cast<size_t>(n);
    }
    close(fd);
    return adsmSuccess;
}

}  // namespace adsm
