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

// A descriptor naming process `pid` (pidfd_open), or -errno.  Signals sent
// through it reach that process or none, even once its pid is reused.
int pidfd_of(pid_t pid);
// Sends sig through such a descriptor; 0 or -errno (ESRCH once it ended).
int pidfd_kill(int pidfd, int sig);

}  // namespace adsm::os
