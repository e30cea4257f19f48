// _Fork (glibc 2.34): a fork that runs no atfork handler, for callers that
// must not run the program's.  The runtime's own must run all the same
// (forks.h).  fork() itself reaches _Fork inside the C library, past this
// interposer, and runs the handlers as registered.  A fork or clone made by
// number through syscall() comes the same way (raw_syscalls.cpp); one made
// with the instruction itself is not seen (README).
#include <unistd.h>

#include "interpose/forks.h"
#include "interpose/interceptor.h"

extern "C" pid_t _Fork(void);

INTERCEPTOR(pid_t, _Fork) {
    return adsm::interpose::with_fork_handlers([] { return REAL(_Fork)(); });
}
