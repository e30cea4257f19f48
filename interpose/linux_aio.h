// Linux's native asynchronous I/O by number (linux_aio.cpp), for the
// syscall() interposer (raw_syscalls.cpp).
#pragma once

#include <linux/aio_abi.h>

namespace adsm::interpose {

// io_submit, with the requests on shared memory on bounce buffers.
long linux_aio_submit(long ctx, long nr, struct iocb **iocbs);
// After io_getevents, io_pgetevents or io_cancel handed the program these
// completions: their bytes in its buffers.
void linux_aio_harvested(long ctx, struct io_event *events, long count);
// After io_destroy: the context's requests are gone.
void linux_aio_destroyed(long ctx);

}  // namespace adsm::interpose
