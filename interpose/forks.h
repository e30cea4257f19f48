// A process made by a call that runs no pthread_atfork handler (_Fork, a
// fork or a clone by number) still needs the runtime's: without them the
// child keeps the window's shared mappings and writes into its parent's
// objects.  The call runs between them, as the C library's fork runs its own.
#pragma once

#include <errno.h>

#include "api/preload.h"

namespace adsm::interpose {

template <class MakeProcess>
auto with_fork_handlers(MakeProcess make) {
    adsm::preload::fork_prepare();
    auto pid = make();
    const int saved = errno;
    if (pid == 0) adsm::preload::fork_child();
    else adsm::preload::fork_parent();
    errno = saved;
    return pid;
}

}  // namespace adsm::interpose
