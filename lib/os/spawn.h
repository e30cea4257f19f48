// Starting a helper process that stays out of the application's way.  It is
// started through a short-lived intermediate, so it is not the
// application's child: wait(-1) and SIGCHLD handlers in the host program
// never see it.  It inherits only the descriptors asked for.  Its liveness is
// the caller's business (a socket that closes when it dies works best).
#pragma once

#include <sys/types.h>

namespace adsm::os {

// Runs execve(path, argv, envp) in a new process.  Descriptors in keep[]
// stay open (and lose close-on-exec); 1 and 2 are kept, 0 reads /dev/null,
// all others are closed.  Signal handlers are reset and the signal mask is
// cleared.  Returns 0 and the pid, or -errno (including an execve failure).
int spawn_detached(const char *path, char *const argv[], char *const envp[], const int *keep, int nkeep,
                   pid_t *pid);

}  // namespace adsm::os
