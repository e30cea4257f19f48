// Kernel parameter sizes read from SPIR-V (backend/levelzero/spirv_params.h),
// on modules assembled here word by word and, when the build has clang and
// llvm-spirv, on the example's kernels as those tools compile them.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "backend/levelzero/spirv_params.h"

namespace {

using adsm::levelzero::spirv_kernel_params;

class Assembler {
public:
    Assembler() : w_{adsm::levelzero::kSpirvMagic, 0x00010000, 0, 100, 0} {}
    void op(uint32_t code, std::initializer_list<uint32_t> operands, const char *literal = nullptr) {
        std::vector<uint32_t> lit;
        if (literal) {
            std::string s(literal);
            s.resize((s.size() / 4 + 1) * 4, '\0');
            lit.resize(s.size() / 4);
            memcpy(lit.data(), s.data(), s.size());
        }
        w_.push_back(static_cast<uint32_t>(1 + operands.size() + lit.size()) << 16 | code);
        w_.insert(w_.end(), operands.begin(), operands.end());
        w_.insert(w_.end(), lit.begin(), lit.end());
    }
    // A literal string in the middle of the operands (OpEntryPoint).
    void entry_point(uint32_t fn, const char *name) { op(15, {6, fn}, name); }
    const std::vector<uint32_t> &words() const { return w_; }
    size_t bytes() const { return w_.size() * 4; }

private:
    std::vector<uint32_t> w_;
};

// kernel void k(global float *, float, uint, struct {int; double; char[24];}
// passed by value, float3, local float *)
Assembler sample(uint32_t addressing) {
    Assembler a;
    a.op(14, {addressing, 2});  // OpMemoryModel
    a.entry_point(50, "k");
    a.op(21, {1, 32, 0});       // int
    a.op(22, {2, 32});          // float
    a.op(21, {3, 8, 0});        // char
    a.op(22, {4, 64});          // double
    a.op(23, {5, 2, 3});        // float3
    a.op(32, {6, 5, 2});        // global float *
    a.op(32, {7, 4, 2});        // local float *
    a.op(43, {1, 8, 24});       // constant 24
    a.op(28, {9, 3, 8});        // char[24]
    a.op(30, {10, 1, 4, 9});    // the struct
    a.op(32, {11, 7, 10});      // function-storage pointer to it (by value)
    a.op(19, {12});             // void
    a.op(33, {13, 12, 6, 2, 1, 11, 5, 7});
    a.op(71, {54, 38, 2});      // parameter 54 is ByVal
    a.op(54, {12, 50, 0, 13});  // the kernel
    uint32_t param = 51;
    for (uint32_t t : {6u, 2u, 1u, 11u, 5u, 7u}) a.op(55, {t, param++});
    a.op(56, {});
    return a;
}

TEST(SpirvParams, SizesFollowOpenClLayout) {
    Assembler a = sample(2);
    std::vector<uint32_t> sizes;
    ASSERT_TRUE(spirv_kernel_params(a.words().data(), a.bytes(), "k", &sizes));
    // A by-value struct is its C layout (4 + 4 padding + 8 + 24), a float3
    // takes a float4's room, a __local buffer's size is the program's to say.
    EXPECT_EQ(sizes, (std::vector<uint32_t>{8, 4, 4, 40, 16, 0}));
}

TEST(SpirvParams, ThirtyTwoBitAddressingHasFourBytePointers) {
    Assembler a = sample(1);
    std::vector<uint32_t> sizes;
    ASSERT_TRUE(spirv_kernel_params(a.words().data(), a.bytes(), "k", &sizes));
    EXPECT_EQ(sizes[0], 4u);
}

TEST(SpirvParams, WhatIsNotAKernelOfAWellFormedModuleIsRefused) {
    Assembler a = sample(2);
    std::vector<uint32_t> sizes;
    EXPECT_FALSE(spirv_kernel_params(a.words().data(), a.bytes(), "other", &sizes));
    EXPECT_FALSE(spirv_kernel_params(a.words().data(), a.bytes() - 8, "k", &sizes)) << "cut inside an instruction";
    std::vector<uint32_t> bad = a.words();
    bad[5] = 0xffff0000 | (bad[5] & 0xffff);  // an instruction longer than the module
    EXPECT_FALSE(spirv_kernel_params(bad.data(), bad.size() * 4, "k", &sizes));
    const char text[] = "scale:8,4,4;";
    EXPECT_FALSE(spirv_kernel_params(text, 12, "scale", &sizes));
    EXPECT_FALSE(spirv_kernel_params(nullptr, 0, "k", &sizes));
}

#ifdef ADSM_SPIRV_MODULE
// The example's kernels as clang and llvm-spirv compile them.
TEST(SpirvParams, TheCompiledExampleKernels) {
    FILE *f = fopen(ADSM_SPIRV_MODULE, "rb");
    ASSERT_NE(f, nullptr) << ADSM_SPIRV_MODULE;
    std::vector<char> image(1 << 20);
    image.resize(fread(image.data(), 1, image.size(), f));
    fclose(f);
    std::vector<uint32_t> sizes;
    ASSERT_TRUE(spirv_kernel_params(image.data(), image.size(), "scale", &sizes));
    EXPECT_EQ(sizes, (std::vector<uint32_t>{8, 4, 4}));
    ASSERT_TRUE(spirv_kernel_params(image.data(), image.size(), "sum_list", &sizes));
    EXPECT_EQ(sizes, (std::vector<uint32_t>{8, 8}));
}
#endif

}  // namespace
