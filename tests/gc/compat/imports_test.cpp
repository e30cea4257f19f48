// The walk over every loaded object's dynamic symbols that finds imports of
// GC_ names (interpose/bdwgc/foreign_imports.h), on libraries with either
// kind of symbol hash table, and the decision it leads to.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interpose/bdwgc/foreign_imports.h"

// Defined by the program (exported): what "the runtime" provides here.
extern "C" __attribute__((visibility("default"), noinline)) int GC_walk_test_provided(int x) { return x + 1; }

namespace {

using adsm::bdwgc::GcImport;

struct Found {
    std::string object, symbol;
    bool weak;
};

std::vector<Found> imports(const void *self) {
    std::vector<Found> out;
    adsm::bdwgc::for_each_gc_import(
        self,
        [](const GcImport &i, void *p) { static_cast<std::vector<Found> *>(p)->push_back({i.object, i.symbol, i.weak}); },
        &out);
    return out;
}

const void *self() { return reinterpret_cast<const void *>(&GC_walk_test_provided); }

class ImportsWalk : public testing::TestWithParam<const char *> {
protected:
    void SetUp() override {
        lib_ = dlopen(GetParam(), RTLD_LAZY | RTLD_LOCAL);
        ASSERT_NE(lib_, nullptr) << dlerror();
    }
    void TearDown() override {
        if (lib_) dlclose(lib_);
    }
    const Found *find(const std::vector<Found> &all, const char *symbol) {
        for (const Found &f : all)
            if (f.symbol == symbol && f.object.find(GetParam()) != std::string::npos) return &f;
        return nullptr;
    }
    void *lib_ = nullptr;
};

TEST_P(ImportsWalk, FindsEveryUndefinedGcNameOfEachObject) {
    std::vector<Found> all = imports(self());
    const Found *missing = find(all, "GC_walk_test_missing");
    const Found *weak = find(all, "GC_walk_test_weak");
    const Found *provided = find(all, "GC_walk_test_provided");
    ASSERT_NE(missing, nullptr);
    ASSERT_NE(weak, nullptr);
    ASSERT_NE(provided, nullptr);
    EXPECT_FALSE(missing->weak);
    EXPECT_TRUE(weak->weak);
    EXPECT_FALSE(provided->weak);
    for (const Found &f : all) EXPECT_EQ(f.symbol.rfind("GC_", 0), 0u) << f.symbol;
    // The program defines GC_walk_test_provided: a definition is no import.
    for (const Found &f : all) EXPECT_NE(f.object.find("imports_test_lib"), std::string::npos) << f.object << " " << f.symbol;
}

TEST_P(ImportsWalk, SkipsTheObjectThatHoldsSelf) {
    void *in_lib = dlsym(lib_, "imports_test_call_missing");
    ASSERT_NE(in_lib, nullptr);
    for (const Found &f : imports(in_lib)) EXPECT_EQ(f.object.find(GetParam()), std::string::npos) << f.symbol;
}

TEST_P(ImportsWalk, DecidesWhatIsServed) {
    const char *why = nullptr;
    EXPECT_FALSE(adsm::bdwgc::served_by(self(), GcImport{GetParam(), "GC_walk_test_missing", false}, &why));
    ASSERT_NE(why, nullptr);
    EXPECT_NE(std::string(why).find("does not provide"), std::string::npos) << why;
    EXPECT_TRUE(adsm::bdwgc::served_by(self(), GcImport{GetParam(), "GC_walk_test_weak", true}, &why));
    EXPECT_TRUE(adsm::bdwgc::served_by(self(), GcImport{GetParam(), "GC_walk_test_provided", false}, &why));
    // With the library as "the runtime", which defines none of them.
    void *in_lib = dlsym(lib_, "imports_test_call_missing");
    EXPECT_FALSE(adsm::bdwgc::served_by(in_lib, GcImport{"x", "GC_walk_test_provided", false}, &why));
}

TEST_P(ImportsWalk, RefusalNamesTheSymbolAndTheObject) {
    testing::internal::CaptureStderr();
    bool accepted = adsm::bdwgc::check_gc_imports("the test");
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(accepted);
    EXPECT_NE(err.find("refusing the test"), std::string::npos) << err;
    EXPECT_NE(err.find(std::string(GetParam()) + " imports GC_walk_test_missing, which adsm's collector does not provide"),
              std::string::npos)
        << err;
    EXPECT_EQ(err.find("GC_walk_test_weak"), std::string::npos) << err;
}

INSTANTIATE_TEST_SUITE_P(HashTables, ImportsWalk, testing::Values(ADSM_IMPORTS_LIB_GNU, ADSM_IMPORTS_LIB_SYSV));

}  // namespace
