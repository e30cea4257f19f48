// The child of a fork takes its copy of the shared objects from memory it
// still shares with its parent (the host mirror, mapped shared), so until
// that copy is done, what the parent writes there reaches the child too: a
// program that forks to save a snapshot and writes on (a database's
// background save) gave its child data from after the fork.  The forking
// thread therefore waits in its fork handler until its child says the copy
// is done, or has ended.  A pipe made just before the fork carries the
// child's process id (the parent watches for its end through a pidfd, since
// another thread's child may hold the pipe open too) and then one byte when
// the copy is done.
#pragma once

namespace adsm::os {

class ForkHandshake {
public:
    // Before the fork, in the forking thread.  Without a pipe (no
    // descriptors left) the fork goes on without the wait.
    void prepare();
    // In the child: before its copy, and once it is done.
    void child_started();
    void child_done();
    // In the forking thread after the fork, whether it made a child or not.
    // A child held stopped (a debugger that keeps it, SIGSTOP) does not
    // hold its parent: every second of waiting the parent looks, and goes
    // on without the wait when it finds the child stopped.
    enum class Wait { done, stopped };
    Wait parent_wait();

private:
    void close_all();
    int fds_[2] = {-1, -1};
};

}  // namespace adsm::os
