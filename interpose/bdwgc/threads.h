// Thread registration as bdwgc's API reports it.  The collector itself
// needs none (it finds every thread in /proc/self/task); the answers to
// GC_register_my_thread and GC_thread_is_registered follow the calls made.
#pragma once

namespace adsm::bdwgc {

void note_thread_registered();

}  // namespace adsm::bdwgc
