// _Fork (glibc 2.34): a fork that runs no atfork handler, for callers that
// must not run the program's.  The runtime's own must run all the same: a
// child made without them kept the window's shared mappings and wrote into
// its parent's objects (a byte the child set in a malloc'd buffer showed in
// the parent).  fork() itself reaches _Fork inside the C library, past this
// interposer, and runs the handlers as registered.  A raw clone or fork
// system call is not seen (README).
#include <errno.h>
#include <unistd.h>

#include "api/preload.h"
#include "interpose/interceptor.h"

extern "C" pid_t _Fork(void);

INTERCEPTOR(pid_t, _Fork) {
    adsm::preload::fork_prepare();
    pid_t pid = REAL(_Fork)();
    const int saved = errno;
    if (pid == 0) adsm::preload::fork_child();
    else adsm::preload::fork_parent();
    errno = saved;
    return pid;
}
