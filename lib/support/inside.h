// Whether the calling thread is inside the runtime.  Code running there
// (and a signal handler that interrupts it) must not come back into the
// runtime through an interposed call such as malloc: an Inside marks the
// thread for its lifetime.
#pragma once

namespace adsm {

class Inside {
public:
    Inside();
    ~Inside();
    Inside(const Inside &) = delete;
    Inside &operator=(const Inside &) = delete;
};

bool inside_runtime();

}  // namespace adsm
