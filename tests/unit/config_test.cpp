#include <unistd.h>

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "support/config.h"

using namespace adsm;

namespace {
Status parse(const std::map<std::string, std::string> &env, Config *c) {
    return parse_config(
        [&](const char *n) -> const char * {
            auto it = env.find(n);
            return it == env.end() ? nullptr : it->second.c_str();
        },
        c);
}
}  // namespace

TEST(ConfigTest, SizesAcceptSuffixes) {
    uint64_t v;
    ASSERT_TRUE(parse_size("4096", &v));
    EXPECT_EQ(v, 4096u);
    ASSERT_TRUE(parse_size("64K", &v));
    EXPECT_EQ(v, 64u << 10);
    ASSERT_TRUE(parse_size("256MiB", &v));
    EXPECT_EQ(v, 256u << 20);
    ASSERT_TRUE(parse_size("16g", &v));
    EXPECT_EQ(v, 16ull << 30);
    ASSERT_TRUE(parse_size("1T", &v));
    EXPECT_EQ(v, 1ull << 40);
}

TEST(ConfigTest, SizesRejectGarbage) {
    uint64_t v;
    for (const char *bad : {"", "-1", "+5", "12Q", "K", "1.5G", "99999999999999999999", "17179869184T", "4 K"})
        EXPECT_FALSE(parse_size(bad, &v)) << bad;
}

TEST(ConfigTest, NumbersAndIntegers) {
    double d;
    EXPECT_TRUE(parse_number("12.5", &d));
    EXPECT_DOUBLE_EQ(d, 12.5);
    EXPECT_FALSE(parse_number("-1", &d));
    EXPECT_FALSE(parse_number("nan", &d));
    EXPECT_FALSE(parse_number("inf", &d));
    EXPECT_FALSE(parse_number("3x", &d));
    uint64_t u;
    EXPECT_TRUE(parse_uint("0x300000000000", &u));
    EXPECT_EQ(u, 0x300000000000ull);
    EXPECT_FALSE(parse_uint("-3", &u));
}

TEST(ConfigTest, DefaultsWithEmptyEnvironment) {
    Config c;
    ASSERT_EQ(parse({}, &c), adsmSuccess);
    EXPECT_EQ(c.device, "sim");
    EXPECT_EQ(c.protocol, "delta");
    EXPECT_EQ(c.block_size, 256u * 1024);
    EXPECT_EQ(c.sim_memory, 16ull << 30);
    EXPECT_EQ(c.remote_spin_us, -1) << "auto";
    EXPECT_EQ(c.malloc_keep, 64ull << 20);
    EXPECT_FALSE(c.stats);
}

TEST(ConfigTest, ReadsEveryVariable) {
    Config c;
    ASSERT_EQ(parse({{"ADSM_DEVICE", "cpu"},
                     {"ADSM_PROTOCOL", "lazy"},
                     {"ADSM_BLOCK_SIZE", "64K"},
                     {"ADSM_ROLLING_SIZE", "3"},
                     {"ADSM_SIM_MEMORY", "512M"},
                     {"ADSM_SIM_LINK_GBPS", "12"},
                     {"ADSM_SIM_LINK_LATENCY_US", "5"},
                     {"ADSM_SIM_LAUNCH_US", "9.7"},
                     {"ADSM_SIM_SYNC_COPY_US", "9.8"},
                     {"ADSM_SIM_PIN_US_PER_MIB", "75"},
                     {"ADSM_SIM_WORKERS", "3"},
                     {"ADSM_STATS", "1"},
                     {"ADSM_LOG", "debug"},
                     {"ADSM_VA_BASE", "0x400000000000"},
                     {"ADSM_VA_SIZE", "128G"},
                     {"ADSM_DIRTY_TRACKING", "mprotect"},
                     {"ADSM_ON_RACE", "abort"},
                     {"ADSM_MALLOC_KEEP", "0"},
                     {"ADSM_REMOTE_SPIN_US", "0"}},
                    &c),
              adsmSuccess);
    EXPECT_EQ(c.remote_spin_us, 0);
    Config a;
    ASSERT_EQ(parse({{"ADSM_REMOTE_SPIN_US", "auto"}}, &a), adsmSuccess);
    EXPECT_EQ(a.remote_spin_us, -1);
    EXPECT_EQ(c.device, "cpu");
    EXPECT_EQ(c.protocol, "lazy");
    EXPECT_EQ(c.block_size, 64u * 1024);
    EXPECT_EQ(c.rolling_size, 3u);
    EXPECT_EQ(c.sim_memory, 512ull << 20);
    EXPECT_DOUBLE_EQ(c.link_gbps, 12);
    EXPECT_DOUBLE_EQ(c.link_latency_us, 5);
    EXPECT_DOUBLE_EQ(c.launch_us, 9.7);
    EXPECT_DOUBLE_EQ(c.sync_copy_us, 9.8);
    EXPECT_DOUBLE_EQ(c.sim_pin_us_per_mib, 75);
    EXPECT_EQ(c.sim_workers, 3u);
    EXPECT_TRUE(c.stats);
    EXPECT_EQ(c.log_level, LogLevel::debug);
    EXPECT_EQ(c.va_base, 0x400000000000ull);
    EXPECT_EQ(c.va_size, 128ull << 30);
    EXPECT_EQ(c.dirty_tracking, "mprotect");
    EXPECT_EQ(c.on_race, "abort");
    EXPECT_EQ(c.malloc_keep, 0u);
}

TEST(ConfigTest, MinorCollectionSettings) {
    Config d;
    ASSERT_EQ(parse({}, &d), adsmSuccess);
    EXPECT_EQ(d.gc_generational, "auto");
    EXPECT_EQ(d.gc_full_every, 8u);
    Config c;
    ASSERT_EQ(parse({{"ADSM_GC_GENERATIONAL", "off"}, {"ADSM_GC_FULL_EVERY", "3"}}, &c), adsmSuccess);
    EXPECT_EQ(c.gc_generational, "off");
    EXPECT_EQ(c.gc_full_every, 3u);
}

TEST(ConfigTest, ToolVariables) {
    Config c;
    ASSERT_EQ(parse({{"ADSM_STATS", "json:/tmp/s-%p.json"}, {"ADSM_TRACE", "t.json"}, {"ADSM_PROFILE", "1"}}, &c),
              adsmSuccess);
    EXPECT_TRUE(c.stats);
    EXPECT_EQ(c.stats_json, "/tmp/s-%p.json");
    EXPECT_EQ(c.trace_file, "t.json");
    EXPECT_EQ(c.profile_top, 20u);  // 1 means "on", with the default number of rows
    Config d;
    ASSERT_EQ(parse({{"ADSM_PROFILE", "7"}}, &d), adsmSuccess);
    EXPECT_EQ(d.profile_top, 7u);
    EXPECT_EQ(file_for_process("a-%p.json"), "a-" + std::to_string(getpid()) + ".json");
    EXPECT_EQ(file_for_process("plain%"), "plain%");
}

TEST(ConfigTest, BadValuesNameTheVariable) {
    struct Case {
        const char *var, *value;
    } cases[] = {
        {"ADSM_BLOCK_SIZE", "1000"},      {"ADSM_BLOCK_SIZE", "0"},      {"ADSM_ROLLING_SIZE", "0"},
        {"ADSM_ROLLING_SIZE", "1"},
        {"ADSM_SIM_MEMORY", "12"},        {"ADSM_SIM_LINK_GBPS", "fast"}, {"ADSM_SIM_LINK_LATENCY_US", "-2"}, {"ADSM_SIM_LAUNCH_US", "soon"}, {"ADSM_SIM_SYNC_COPY_US", "-1"},
        {"ADSM_SIM_WORKERS", "0"},        {"ADSM_STATS", "maybe"},       {"ADSM_LOG", "loud"},
        {"ADSM_VA_BASE", "0x1234"},       {"ADSM_VA_SIZE", "1M"},        {"ADSM_DIRTY_TRACKING", "soft"},
        {"ADSM_ON_RACE", "ignore"},       {"ADSM_MALLOC_THRESHOLD", "0"},  {"ADSM_CHAOS_RELEASE_EVERY", "x"},
        {"ADSM_CHAOS_SEED", "-1"},        {"ADSM_STATS", "json:"},       {"ADSM_PROFILE", "lots"},
        {"ADSM_PROFILE", "20000"},       {"ADSM_GC_GENERATIONAL", "yes"}, {"ADSM_GC_FULL_EVERY", "0"},
        {"ADSM_SPILL", "disk"},          {"ADSM_DEVICE", "sim,,sim"},    {"ADSM_VISIBLE_DEVICES", "x"},
        {"ADSM_CUDA_PIN", "always"},     {"ADSM_GPU_FAULT_CALLS", "inline"}, {"ADSM_REMOTE_SPIN_US", "-5"}, {"ADSM_SIM_PIN_US_PER_MIB", "-1"},
        {"ADSM_REMOTE_SPIN_US", "200000"}, {"ADSM_MALLOC_KEEP", "lots"},  {"ADSM_MALLOC_KEEP", "2T"},
    };
    for (const Case &k : cases) {
        Config c;
        EXPECT_EQ(parse({{k.var, k.value}}, &c), adsmErrorInitialization) << k.var;
        std::string detail = last_detail();
        EXPECT_NE(detail.find(k.var), std::string::npos) << detail;
        EXPECT_NE(detail.find(k.value), std::string::npos) << detail;
    }
}

TEST(ConfigTest, CudaPinning) {
    Config c;
    EXPECT_EQ(c.cuda_pin, "lazy");
    for (const char *v : {"eager", "off", "lazy"}) {
        ASSERT_EQ(parse({{"ADSM_CUDA_PIN", v}}, &c), adsmSuccess) << last_detail();
        EXPECT_EQ(c.cuda_pin, v);
    }
}

TEST(ConfigTest, GpuFaultCalls) {
    Config c;
    EXPECT_EQ(c.gpu_fault_calls, "helpers");
    for (const char *v : {"direct", "helpers"}) {
        ASSERT_EQ(parse({{"ADSM_GPU_FAULT_CALLS", v}}, &c), adsmSuccess) << last_detail();
        EXPECT_EQ(c.gpu_fault_calls, v);
    }
}

TEST(ConfigTest, DeviceListsAndVisibleDevices) {
    Config c;
    ASSERT_EQ(parse({{"ADSM_DEVICE", "sim, cpu,sim"}, {"ADSM_SPILL", "evict"}}, &c), adsmSuccess) << last_detail();
    EXPECT_EQ(c.devices, (std::vector<std::string>{"sim", "cpu", "sim"}));
    EXPECT_EQ(c.device, "sim");
    EXPECT_EQ(c.spill, "evict");
    Config v;
    ASSERT_EQ(parse({{"ADSM_DEVICE", "sim,cpu,sim"}, {"ADSM_VISIBLE_DEVICES", "1,0"}}, &v), adsmSuccess) << last_detail();
    EXPECT_EQ(v.devices, (std::vector<std::string>{"cpu", "sim"}));
    EXPECT_EQ(v.device, "cpu") << "device 0 is the first visible one";
    Config bad;
    EXPECT_EQ(parse({{"ADSM_DEVICE", "sim,sim"}, {"ADSM_VISIBLE_DEVICES", "2"}}, &bad), adsmErrorInitialization);
    EXPECT_NE(std::string(last_detail()).find("0 to 1"), std::string::npos) << last_detail();
    EXPECT_EQ(parse({{"ADSM_DEVICE", "sim,sim"}, {"ADSM_VISIBLE_DEVICES", "1,1"}}, &bad), adsmErrorInitialization);
    Config d;
    ASSERT_EQ(parse({}, &d), adsmSuccess);
    EXPECT_EQ(d.devices, std::vector<std::string>{"sim"});
    EXPECT_EQ(d.spill, "host");
}

TEST(ConfigTest, MallocThresholdDefaultsToTheWayTheLibraryCameIn) {
    uint64_t t;
    ASSERT_TRUE(malloc_threshold_from(nullptr, true, nullptr, &t));
    EXPECT_EQ(t, 1u << 20);
    ASSERT_TRUE(malloc_threshold_from(nullptr, true, "sim", &t));
    EXPECT_EQ(t, 1u << 20);
    ASSERT_TRUE(malloc_threshold_from(nullptr, false, nullptr, &t));
    EXPECT_EQ(t, UINT64_MAX);
    // On a GPU, explicit-copy programs keep their malloc'd buffers.
    ASSERT_TRUE(malloc_threshold_from(nullptr, true, "cuda", &t));
    EXPECT_EQ(t, UINT64_MAX);
    ASSERT_TRUE(malloc_threshold_from("1M", true, "cuda", &t));
    EXPECT_EQ(t, 1u << 20);
    ASSERT_TRUE(malloc_threshold_from("16K", false, nullptr, &t));
    EXPECT_EQ(t, 16u << 10);
    ASSERT_TRUE(malloc_threshold_from("off", true, nullptr, &t));
    EXPECT_EQ(t, UINT64_MAX);
    EXPECT_FALSE(malloc_threshold_from("lots", true, nullptr, &t));
}

TEST(ConfigTest, EveryVariableIsDocumented) {
    // parse_config reads exactly the documented variables: each one set to a
    // bad value must be noticed.
    for (const ConfigVar &v : config_variables()) {
        std::string name = v.name;
        if (name == "ADSM_DEVICE" || name == "ADSM_PROTOCOL") continue;  // checked by their registries
        if (name == "ADSM_TRACE" || name == "ADSM_REMOTE_KEY") continue;  // any file name: checked when opened
        Config c;
        EXPECT_EQ(parse({{name, "!"}}, &c), adsmErrorInitialization) << name;
    }
}
