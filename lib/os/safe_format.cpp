#include "os/safe_format.h"

#include <cstdint>

namespace adsm::os {
namespace {

class Out {
public:
    Out(char *buf, size_t cap) : buf_(buf), cap_(cap) {}
    void put(char c) {
        if (len_ + 1 < cap_) buf_[len_++] = c;
    }
    void pad(size_t n, char c) {
        while (n-- > 0) put(c);
    }
    void finish() {
        if (cap_) buf_[len_ < cap_ ? len_ : cap_ - 1] = '\0';
    }

private:
    char *buf_;
    size_t cap_;
    size_t len_ = 0;
};

struct Spec {
    bool left = false, zero = false;
    size_t width = 0;
    long precision = -1;
};

void emit(Out &out, const Spec &s, const char *text, size_t n, bool numeric) {
    size_t fill = s.width > n ? s.width - n : 0;
    if (!s.left) {
        // Zeros go after a sign, as printf puts them.
        if (numeric && s.zero && n && text[0] == '-') {
            out.put('-');
            ++text;
            --n;
            out.pad(fill, '0');
        } else {
            out.pad(fill, numeric && s.zero ? '0' : ' ');
        }
    }
    for (size_t i = 0; i < n; ++i) out.put(text[i]);
    if (s.left) out.pad(fill, ' ');
}

size_t digits(char *end, uint64_t v, unsigned base, bool upper) {
    const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    size_t n = 0;
    do {
        *--end = set[v % base];
        v /= base;
        ++n;
    } while (v);
    return n;
}

}  // namespace

bool safe_vformat(char *buf, size_t cap, const char *fmt, va_list ap) {
    Out out(buf, cap);
    for (const char *p = fmt; *p; ++p) {
        if (*p != '%') {
            out.put(*p);
            continue;
        }
        Spec s;
        for (++p; *p == '-' || *p == '0'; ++p) (*p == '-' ? s.left : s.zero) = true;
        if (*p == '*') {
            int w = va_arg(ap, int);
            if (w < 0) s.left = true, w = -w;
            s.width = static_cast<size_t>(w);
            ++p;
        } else {
            while (*p >= '0' && *p <= '9') s.width = s.width * 10 + static_cast<size_t>(*p++ - '0');
        }
        if (*p == '.') {
            ++p;
            s.precision = 0;
            if (*p == '*') {
                s.precision = va_arg(ap, int);
                ++p;
            } else {
                while (*p >= '0' && *p <= '9') s.precision = s.precision * 10 + (*p++ - '0');
            }
        }
        int longs = 0;  // 0: int, 1: long, 2: long long; z j t are long-sized here
        if (*p == 'h') {
            ++p;
            if (*p == 'h') ++p;
        } else if (*p == 'l') {
            ++p;
            longs = 1;
            if (*p == 'l') ++p, longs = 2;
        } else if (*p == 'z' || *p == 'j' || *p == 't') {
            ++p;
            longs = 1;
        }
        char num[24];
        char *end = num + sizeof num;
        switch (*p) {
        case '%': out.put('%'); break;
        case 'c': {
            char c = static_cast<char>(va_arg(ap, int));
            emit(out, s, &c, 1, false);
            break;
        }
        case 's': {
            const char *str = va_arg(ap, const char *);
            if (!str) str = "(null)";
            size_t n = 0;
            while (str[n] && (s.precision < 0 || n < static_cast<size_t>(s.precision))) ++n;
            emit(out, s, str, n, false);
            break;
        }
        case 'd':
        case 'i': {
            long long v = longs == 2 ? va_arg(ap, long long) : longs == 1 ? va_arg(ap, long) : va_arg(ap, int);
            uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
            size_t n = digits(end, mag, 10, false);
            if (v < 0) *(end - ++n) = '-';
            emit(out, s, end - n, n, true);
            break;
        }
        case 'u':
        case 'x':
        case 'X': {
            unsigned long long v = longs == 2   ? va_arg(ap, unsigned long long)
                                   : longs == 1 ? va_arg(ap, unsigned long)
                                                : va_arg(ap, unsigned);
            size_t n = digits(end, v, *p == 'u' ? 10 : 16, *p == 'X');
            emit(out, s, end - n, n, true);
            break;
        }
        case 'p': {
            void *v = va_arg(ap, void *);
            if (!v) {
                emit(out, s, "(nil)", 5, false);
                break;
            }
            size_t n = digits(end, reinterpret_cast<uintptr_t>(v), 16, false);
            *(end - ++n) = 'x';
            *(end - ++n) = '0';
            emit(out, s, end - n, n, false);
            break;
        }
        default: return false;
        }
    }
    out.finish();
    return true;
}

size_t safe_format(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bool ok = safe_vformat(buf, cap, fmt, ap);
    va_end(ap);
    if (!ok || cap == 0) return 0;
    size_t n = 0;
    while (buf[n]) ++n;
    return n;
}

}  // namespace adsm::os
