#include "test_kernels.h"

using namespace adsm_test;

TEST(KernelsTest, RegisterFindAndName) {
    size_t sizes[] = {sizeof(uint32_t *), sizeof(uint32_t)};
    adsmKernel_t k = nullptr, again = nullptr, found = nullptr;
    ASSERT_EQ(adsmRegisterKernel("kernels.c_kernel", c_kernel, 2, sizes, &k), adsmSuccess);
    ASSERT_EQ(adsmRegisterKernel("kernels.c_kernel", c_kernel, 2, sizes, &again), adsmSuccess);
    EXPECT_EQ(k, again);
    ASSERT_EQ(adsmGetKernel("kernels.c_kernel", &found), adsmSuccess);
    EXPECT_EQ(found, k);
    EXPECT_STREQ(adsmGetKernelName(k), "kernels.c_kernel");
    EXPECT_EQ(adsmGetKernelName(reinterpret_cast<adsmKernel_t>(uintptr_t(999999))), nullptr);
}

TEST(KernelsTest, SameNameOtherFunctionIsRefused) {
    size_t sizes[] = {sizeof(uint32_t *), sizeof(uint32_t)};
    adsmKernel_t k;
    ASSERT_EQ(adsmRegisterKernel("kernels.clash", c_kernel, 2, sizes, &k), adsmSuccess);
    EXPECT_EQ(adsmRegisterKernel("kernels.clash", other_kernel, 2, sizes, &k), adsmErrorKernelExists);
    EXPECT_NE(detail().find("kernels.clash"), std::string::npos);
    EXPECT_EQ(adsmRegisterKernel("kernels.clash", c_kernel, 1, sizes, &k), adsmErrorKernelExists);
}

TEST(KernelsTest, CallByName) {
    size_t sizes[] = {sizeof(uint32_t *), sizeof(uint32_t)};
    adsmKernel_t k;
    ASSERT_EQ(adsmRegisterKernel("kernels.by_name", c_kernel, 2, sizes, &k), adsmSuccess);
    auto *out = static_cast<uint32_t *>(adsmAlloc(32 * sizeof(uint32_t)));
    ASSERT_NE(out, nullptr);
    uint32_t base = 100;
    void *args[] = {&out, &base};
    ASSERT_EQ(adsmCallByName("kernels.by_name", {1, 1, 1}, {32, 1, 1}, args), adsmSuccess);
    ASSERT_EQ(adsmSync(), adsmSuccess);
    for (uint32_t i = 0; i < 32; ++i) EXPECT_EQ(out[i], 100 + i);
    EXPECT_EQ(adsmFree(out), adsmSuccess);
}

TEST(KernelsTest, UnknownNamesAreReported) {
    adsmKernel_t k;
    EXPECT_EQ(adsmGetKernel("kernels.no_such_kernel", &k), adsmErrorKernelNotFound);
    EXPECT_NE(detail().find("no_such_kernel"), std::string::npos);
    EXPECT_EQ(adsmCallByName("kernels.no_such_kernel", {1, 1, 1}, {1, 1, 1}, nullptr), adsmErrorKernelNotFound);
    EXPECT_EQ(adsmGetLastError(), adsmErrorKernelNotFound);
    EXPECT_EQ(adsmGetLastError(), adsmSuccess) << "adsmGetLastError resets";
}

TEST(KernelsTest, BadRegistrationsAreRefused) {
    size_t sizes[] = {8, 0};
    adsmKernel_t k;
    EXPECT_EQ(adsmRegisterKernel(nullptr, c_kernel, 0, nullptr, &k), adsmErrorInvalidValue);
    EXPECT_EQ(adsmRegisterKernel("", c_kernel, 0, nullptr, &k), adsmErrorInvalidValue);
    EXPECT_EQ(adsmRegisterKernel("kernels.nofn", nullptr, 0, nullptr, &k), adsmErrorInvalidValue);
    EXPECT_EQ(adsmRegisterKernel("kernels.zero_param", c_kernel, 2, sizes, &k), adsmErrorInvalidValue);
    EXPECT_EQ(adsmRegisterKernel("kernels.null_sizes", c_kernel, 2, nullptr, &k), adsmErrorInvalidValue);
    EXPECT_EQ(adsmRegisterKernel("kernels.many", c_kernel, 65, sizes, &k), adsmErrorInvalidValue);
    size_t huge[] = {4000, 200};
    EXPECT_EQ(adsmRegisterKernel("kernels.huge", c_kernel, 2, huge, &k), adsmErrorInvalidValue);
    EXPECT_EQ(adsmRegisterKernel("kernels.noout", c_kernel, 0, nullptr, nullptr), adsmErrorInvalidValue);
}

TEST(KernelsTest, BadLaunchesAreRefused) {
    size_t sizes[] = {sizeof(uint32_t *), sizeof(uint32_t)};
    adsmKernel_t k;
    ASSERT_EQ(adsmRegisterKernel("kernels.launch", c_kernel, 2, sizes, &k), adsmSuccess);
    uint32_t *out = nullptr;
    uint32_t base = 0;
    void *args[] = {&out, &base};
    EXPECT_EQ(adsmCall(k, {0, 1, 1}, {1, 1, 1}, args), adsmErrorInvalidLaunch);
    EXPECT_EQ(adsmCall(k, {1, 1, 1}, {1, 0, 1}, args), adsmErrorInvalidLaunch);
    EXPECT_EQ(adsmCall(k, {1, 1, 1}, {1025, 1, 1}, args), adsmErrorInvalidLaunch);
    EXPECT_EQ(adsmCall(k, {1, 1, 1}, {64, 32, 1}, args), adsmErrorInvalidLaunch);
    EXPECT_EQ(adsmCall(k, {1, 70000, 1}, {1, 1, 1}, args), adsmErrorInvalidLaunch);
    EXPECT_EQ(adsmCall(k, {1, 1, 1}, {1, 1, 1}, nullptr), adsmErrorInvalidValue);
    void *half[] = {&out, nullptr};
    EXPECT_EQ(adsmCall(k, {1, 1, 1}, {1, 1, 1}, half), adsmErrorInvalidValue);
    EXPECT_EQ(adsmCall(reinterpret_cast<adsmKernel_t>(uintptr_t(123456)), {1, 1, 1}, {1, 1, 1}, args),
              adsmErrorInvalidValue);
    EXPECT_EQ(adsmCall(nullptr, {1, 1, 1}, {1, 1, 1}, args), adsmErrorInvalidValue);
    // Nothing was launched, so the sync has nothing to report.
    EXPECT_EQ(adsmSync(), adsmSuccess);
}

TEST(KernelsTest, CppWrapperThrowsWithDetail) {
    auto k = adsm_test::device_kernel<empty_kernel>("kernels.empty");
    try {
        k(adsm::dim3(1), adsm::dim3(2000));
        FAIL() << "expected adsm::error";
    } catch (const adsm::error &e) {
        EXPECT_EQ(e.code(), adsmErrorInvalidLaunch);
        EXPECT_NE(std::string(e.what()).find("1024"), std::string::npos) << e.what();
    }
}
