// The structures ioctl and fcntl pass the kernel through their untyped
// last argument.  In shared memory whose block was closed (its data on the
// device) the kernel failed such a call with EFAULT, as for any structure
// (kernel_structs.h); these are opened in place (kernel_in_place.h), since
// a driver's ioctl may use more of its argument than its number says.
//
// The argument's size and direction: most ioctl numbers encode them
// (_IOC); the terminal's and the socket interfaces' older numbers do not,
// and the common ones are listed; any other request whose argument points
// into a shared object gets the rest of that page (256 bytes at least)
// opened both ways, as far as the object goes.
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <termios.h>

#include <algorithm>
#include <cstdint>

#include "api/preload.h"
#include "interpose/interceptor.h"
#include "interpose/kernel_in_place.h"
#include "os/vm.h"

namespace {

using adsm::interpose::open_in_place;

struct Argument {
    size_t n;
    bool written;  // by the kernel (else only read)
};

// The kernel's struct termios, which TCGETS and TCSETS take (the C
// library's is larger; tcgetattr converts): four flags, the line
// discipline and 19 control characters.
constexpr size_t kKernelTermios = 4 * sizeof(tcflag_t) + 1 + 19;

Argument listed(unsigned long request) {
    switch (request) {
    case TCGETS: return {kKernelTermios, true};
    case TCSETS: case TCSETSW: case TCSETSF: return {kKernelTermios, false};
    case TIOCGWINSZ: return {sizeof(struct winsize), true};
    case TIOCSWINSZ: return {sizeof(struct winsize), false};
    case FIONREAD: case TIOCOUTQ: case TIOCMGET: case TIOCGETD: case SIOCATMARK: return {sizeof(int), true};
    case FIONBIO: case FIOASYNC: case TIOCMSET: case TIOCMBIS: case TIOCMBIC: case TIOCSETD: return {sizeof(int), false};
    case TIOCGPGRP: case TIOCGSID: return {sizeof(pid_t), true};
    case TIOCSPGRP: return {sizeof(pid_t), false};
    case SIOCGSTAMP_OLD: return {sizeof(struct timeval), true};
    case SIOCGSTAMPNS_OLD: return {sizeof(struct timespec), true};
    case SIOCGIFCONF: return {sizeof(struct ifconf), true};
    default: return {0, false};
    }
}

void open_ioctl_argument(unsigned long request, void *arg) {
    Argument a{_IOC_SIZE(request), (_IOC_DIR(request) & _IOC_READ) != 0};
    if (_IOC_DIR(request) == _IOC_NONE || a.n == 0) a = listed(request);
    if (a.n == 0) {
        // Unknown (the network interfaces' struct ifreq among them): the
        // rest of its page, and at least what the largest of the old
        // socket requests' structures takes; only the object's own bytes
        // are touched.
        auto at = reinterpret_cast<uintptr_t>(arg);
        a = {std::max<size_t>(adsm::os::page_up(at + 1) - at, 256), true};
    }
    const bool opened = open_in_place(arg, a.n, a.written);
    if (request == SIOCGIFCONF && opened) {
        // The interfaces' records land where the structure says.  (Read
        // only once open: a pointer to no object is the kernel's to refuse.)
        const auto *conf = static_cast<const struct ifconf *>(arg);
        if (conf->ifc_buf && conf->ifc_len > 0) open_in_place(conf->ifc_buf, static_cast<size_t>(conf->ifc_len), true);
    }
}

// fcntl's commands that take a structure.
Argument fcntl_argument(int cmd) {
    switch (cmd) {
    case F_GETLK: case F_OFD_GETLK: return {sizeof(struct flock), true};
    case F_SETLK: case F_SETLKW: case F_OFD_SETLK: case F_OFD_SETLKW: return {sizeof(struct flock), false};
    case F_GETOWN_EX: return {sizeof(struct f_owner_ex), true};
    case F_SETOWN_EX: return {sizeof(struct f_owner_ex), false};
    case F_GET_RW_HINT: case F_GET_FILE_RW_HINT: return {sizeof(uint64_t), true};
    case F_SET_RW_HINT: case F_SET_FILE_RW_HINT: return {sizeof(uint64_t), false};
    default: return {0, false};
    }
}

// The last argument, as the C library takes it: a pointer's worth of the
// register or stack slot (an int passed there leaves the rest unused).
#define LAST_ARGUMENT(after, out) \
    do {                          \
        va_list ap;               \
        va_start(ap, after);      \
        out = va_arg(ap, void *); \
        va_end(ap);               \
    } while (0)

}  // namespace

INTERCEPTOR(int, ioctl, int fd, unsigned long request, ...) {
    void *arg;
    LAST_ARGUMENT(request, arg);
    if (adsm::preload::touches_window(arg, 1)) open_ioctl_argument(request, arg);
    return REAL(ioctl)(fd, request, arg);
}

// fcntl64 is fcntl where off_t is 64 bits wide (every 64-bit target).
#define FCNTL(name)                                                       \
    INTERCEPTOR(int, name, int fd, int cmd, ...) {                        \
        void *arg;                                                        \
        LAST_ARGUMENT(cmd, arg);                                          \
        Argument a = fcntl_argument(cmd);                                 \
        if (a.n && adsm::preload::touches_window(arg, a.n))               \
            open_in_place(arg, a.n, a.written);                           \
        return REAL(name)(fd, cmd, arg);                                  \
    }
FCNTL(fcntl)
FCNTL(fcntl64)
FCNTL(__fcntl)
