#include "backend/remote/key_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/error_text.h"

namespace adsm::remote {

Status load_key(const char *path, std::string *key) {
    key->clear();
    if (!path || !*path) return fail(adsmErrorInvalidValue, "no key file given");
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return fail(adsmErrorInvalidValue, "cannot open the key file %s: %s%s", path, os::error_text(errno),
                    errno == ELOOP ? " (a symbolic link: name the file itself)" : "");
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fail(adsmErrorInvalidValue, "cannot examine the key file %s: %s", path, os::error_text(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fail(adsmErrorInvalidValue, "the key file %s is not a regular file", path);
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        close(fd);
        return fail(adsmErrorInvalidValue,
                    "the key file %s may be read or written by others (mode %03o): only its owner may (chmod 600 %s)",
                    path, static_cast<unsigned>(st.st_mode & 0777), path);
    }
    if (st.st_uid != geteuid()) {
        close(fd);
        return fail(adsmErrorInvalidValue, "the key file %s belongs to another user (uid %u)", path,
                    static_cast<unsigned>(st.st_uid));
    }
    char buf[kMaxKeyBytes + 1];
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, buf + got, sizeof buf - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return fail(adsmErrorInvalidValue, "cannot read the key file %s: %s", path, os::error_text(e));
        }
        if (r == 0 || (got += static_cast<size_t>(r)) == sizeof buf) break;
    }
    close(fd);
    if (got > kMaxKeyBytes) return fail(adsmErrorInvalidValue, "the key file %s is longer than %zu bytes", path, kMaxKeyBytes);
    while (got && (buf[got - 1] == '\n' || buf[got - 1] == '\r' || buf[got - 1] == ' ' || buf[got - 1] == '\t')) --got;
    if (got < kMinKeyBytes)
        return fail(adsmErrorInvalidValue,
                    "the key in %s has %zu bytes; it needs at least %zu (head -c 32 /dev/urandom | base64 > %s)", path,
                    got, kMinKeyBytes, path);
    key->assign(buf, got);
    memset(buf, 0, sizeof buf);
    return adsmSuccess;
}

}  // namespace adsm::remote
