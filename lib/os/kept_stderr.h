// The program's stderr kept for the runtime's reports at exit.  Programs
// close their standard streams on the way out (coreutils' close_stdout,
// mawk) before the runtime's exit handlers run, registered first as they
// were: the statistics asked for with --stats, the profile and the last
// warnings went nowhere, without a word.  When the program closes
// descriptor 2 while the runtime has such a report to make, a copy of it is
// held (os/held_fds.h) and the runtime writes there from then on.  (The
// copy keeps a pipe's write end open: a reader waiting for the end of the
// program's stderr waits for its exit instead, only where reports were
// asked for.)
#pragma once

namespace adsm::os {

// Copies descriptor 2 before the program closes it (once; nothing where it
// is closed already).
void keep_stderr();
// The copy, or -1 while the program's stderr is its own (async-signal-safe).
int kept_stderr();

}  // namespace adsm::os
