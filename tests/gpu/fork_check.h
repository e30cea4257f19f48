// The cuda back-end's fork test, on the driver double (cuda_device_test.cpp)
// and on a GPU (cuda_gpu_test.cpp): a kernel doubles x[i] = i % 1000 and
// only the device holds the result; a fork child cannot use its parent's
// device, so what it reads must have come to the host before the fork, and
// the parent goes on using the device.
#pragma once

#include <adsm.hpp>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

template <class Scale>
void fork_child_reads_what_only_the_device_held(Scale &scale, float *x, unsigned n, unsigned block) {
    for (unsigned i = 0; i < n; ++i) x[i] = static_cast<float>(i % 1000);
    scale(adsm::blocks_for(n, block), adsm::dim3(block), x, 2.0f, n);
    adsm::sync();
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        int bad = 0;
        for (unsigned i = 0; i < n; ++i) bad += x[i] != 2.0f * static_cast<float>(i % 1000);
        _exit(bad ? 1 : 0);
    }
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st)) << "the child died of signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    EXPECT_EQ(WEXITSTATUS(st), 0) << "the child's copy lacks what the kernel wrote";
    scale(adsm::blocks_for(n, block), adsm::dim3(block), x, 2.0f, n);
    ASSERT_EQ(adsmSync(), adsmSuccess) << adsmGetLastErrorDetail();
    for (unsigned i = 0; i < n; i += 997) ASSERT_EQ(x[i], 4.0f * static_cast<float>(i % 1000)) << i;
}
