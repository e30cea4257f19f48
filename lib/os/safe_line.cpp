#include "os/safe_line.h"

#include <unistd.h>

#include <cerrno>

#include "os/kept_stderr.h"

namespace adsm::os {

void write_stderr(const char *p, size_t n) {
    int saved = errno;
    const int kept = kept_stderr();
    const int fd = kept >= 0 ? kept : STDERR_FILENO;
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            break;
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
    errno = saved;
}

SafeLine &SafeLine::str(const char *s) {
    while (*s && len_ < sizeof buf_ - 1) buf_[len_++] = *s++;
    return *this;
}

SafeLine &SafeLine::dec(uint64_t v) {
    char tmp[24];
    int i = 0;
    do {
        tmp[i++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v);
    while (i > 0 && len_ < sizeof buf_ - 1) buf_[len_++] = tmp[--i];
    return *this;
}

SafeLine &SafeLine::hex(uint64_t v) {
    static const char digits[] = "0123456789abcdef";
    char tmp[16];
    int i = 0;
    do {
        tmp[i++] = digits[v & 15];
        v >>= 4;
    } while (v);
    str("0x");
    while (i > 0 && len_ < sizeof buf_ - 1) buf_[len_++] = tmp[--i];
    return *this;
}

void SafeLine::write_stderr() {
    buf_[len_++] = '\n';
    os::write_stderr(buf_, len_);
    len_ = 0;
}

}  // namespace adsm::os
