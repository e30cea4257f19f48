// Each scenario runs in a fresh process (a death test that exits), because
// the runtime reads its configuration once.
#include <gtest/gtest.h>

#include <adsm.h>

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// Starts the runtime with `var=value` and exits 0 if the first call fails
// with `want` and a detail containing `needle` (and a second call fails the
// same way); exits 1 otherwise.
[[noreturn]] void expect_start_failure(const char *var, const char *value, adsmError_t want, const char *needle) {
    setenv(var, value, 1);
    void *p = adsmAlloc(100);
    adsmError_t e = adsmGetLastError();
    std::string d = adsmGetLastErrorDetail();
    bool ok = p == nullptr && e == want && d.find(needle) != std::string::npos;
    void *q = adsmAlloc(100);
    ok = ok && q == nullptr && adsmGetLastError() == want;
    ok = ok && adsmSync() == want && std::string(adsmGetLastErrorDetail()).find(needle) != std::string::npos;
    if (!ok) fprintf(stderr, "got %s: %s\n", adsmGetErrorString(e), d.c_str());
    exit(ok ? 0 : 1);
}

sigjmp_buf g_back;
volatile sig_atomic_t g_program_faults = 0;
void program_fault_handler(int) {
    g_program_faults = g_program_faults + 1;
    siglongjmp(g_back, 1);
}

}  // namespace

class ConfigEnvTest : public ::testing::Test {
protected:
    void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(ConfigEnvTest, DevicesThatCannotStartSayWhatIsMissing) {
    EXPECT_EXIT(expect_start_failure("ADSM_DEVICE", "levelzero", adsmErrorNoDevice, "Level Zero"),
                testing::ExitedWithCode(0), "");
#ifdef ADSM_HAVE_LIBFABRIC
    // Built: it says where the server must be named.
    EXPECT_EXIT(expect_start_failure("ADSM_DEVICE", "remote", adsmErrorNoDevice, "ADSM_REMOTE=HOST:PORT"),
                testing::ExitedWithCode(0), "");
#else
    EXPECT_EXIT(expect_start_failure("ADSM_DEVICE", "remote", adsmErrorNoDevice, "libfabric"),
                testing::ExitedWithCode(0), "");
#endif
    EXPECT_EXIT(expect_start_failure("ADSM_DEVICE", "tpu", adsmErrorNoDevice, "sim, cpu, cuda, levelzero or remote"),
                testing::ExitedWithCode(0), "");
}

// GPUs of one driver share its addresses: other devices cannot join them,
// and Level Zero GPUs do not share one window yet.
TEST_F(ConfigEnvTest, DeviceListsThatCannotShareAWindowAreRefused) {
    EXPECT_EXIT(expect_start_failure("ADSM_DEVICE", "cuda,sim", adsmErrorNotSupported, "other devices cannot join"),
                testing::ExitedWithCode(0), "");
    EXPECT_EXIT(expect_start_failure("ADSM_DEVICE", "sim,cuda,cuda", adsmErrorNotSupported, "cuda,cuda"),
                testing::ExitedWithCode(0), "");
    EXPECT_EXIT(expect_start_failure("ADSM_DEVICE", "levelzero,cpu", adsmErrorNotSupported,
                                     "(levelzero,levelzero), other devices cannot join"),
                testing::ExitedWithCode(0), "");
}

TEST_F(ConfigEnvTest, UnknownProtocolListsTheKnownOnes) {
    EXPECT_EXIT(expect_start_failure("ADSM_PROTOCOL", "magic", adsmErrorInitialization, "batch"),
                testing::ExitedWithCode(0), "");
}

TEST_F(ConfigEnvTest, BadValuesStopTheRuntimeNotTheProgram) {
    EXPECT_EXIT(expect_start_failure("ADSM_BLOCK_SIZE", "3", adsmErrorInitialization, "ADSM_BLOCK_SIZE"),
                testing::ExitedWithCode(0), "");
    EXPECT_EXIT(expect_start_failure("ADSM_SIM_MEMORY", "lots", adsmErrorInitialization, "ADSM_SIM_MEMORY"),
                testing::ExitedWithCode(0), "");
}

// A start that fails late (the trace file cannot be written, after the
// protocol and its fault handling are ready) leaves nothing of the runtime
// behind in the program's own fault handling.
TEST_F(ConfigEnvTest, AStartThatFailsLeavesTheProgramsFaultsToIt) {
    EXPECT_EXIT(
        {
            setenv("ADSM_PROTOCOL", "lazy", 1);  // (one that takes faults)
            setenv("ADSM_TRACE", "/nonexistent-directory/trace.json", 1);
            const bool failed = adsmAlloc(100) == nullptr && adsmGetLastError() == adsmErrorInvalidValue;
            struct sigaction sa = {};
            sa.sa_handler = program_fault_handler;
            sigaction(SIGSEGV, &sa, nullptr);
            void *page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            for (int i = 0; i < 3; ++i)
                if (sigsetjmp(g_back, 1) == 0) *static_cast<volatile int *>(page) = i;
            exit(failed && g_program_faults == 3 ? 0 : 1);
        },
        testing::ExitedWithCode(0), "");
}

TEST_F(ConfigEnvTest, StatsArePrintedAtExit) {
    EXPECT_EXIT(
        {
            setenv("ADSM_STATS", "1", 1);
            void *p = adsmAlloc(1000);
            adsmFree(p);
            exit(p ? 0 : 1);
        },
        testing::ExitedWithCode(0), "adsm statistics \\(device sim, protocol delta(.|\n)*allocations +1");
}
