// The trace recorder on its own: names are escaped into valid JSON, events
// land on the tracks they name, and a full buffer says what it dropped.
// (The trace of a real program is checked by tests/tools.)  The recorder is
// one per process, so this is one test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "os/clock.h"
#include "support/trace.h"

using namespace adsm;

namespace {

std::string slurp(const std::string &path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

size_t count(const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(TraceTest, RecordsEscapesAndCountsDrops) {
    char path[] = "/tmp/adsm-trace-test-XXXXXX";
    int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    ASSERT_FALSE(trace::enabled());
    trace::record(trace::Kind::sync, 1, 2);  // before start: nothing
    const uint64_t capacity = 1000;
    ASSERT_EQ(trace::start(path, "sim", capacity), adsmSuccess);
    ASSERT_TRUE(trace::enabled());

    uint64_t t = os::now_ns();
    trace::record(trace::Kind::call, t, t + 1000, 0, 0, "odd \"name\" \\ with\ttab");
    trace::record(trace::Kind::kernel, t + 10, t + 900, 3, 0, "k", trace::stream_track(3));
    trace::copy(true, 4096, 0x300000001000, t, true);
    trace::record(trace::Kind::read_fault, t, t + 5, 0x300000002000);
    // Fill the buffer past its end: the surplus is counted, not written.
    for (uint64_t i = 0; i < capacity; ++i) trace::record(trace::Kind::sync, t, t + 1);
    trace::write_file();
    EXPECT_FALSE(trace::enabled());
    trace::write_file();  // a second call writes nothing again

    std::string text = slurp(path);
    unlink(path);
    EXPECT_NE(text.find("\"name\":\"call odd \\\"name\\\" \\\\ with\\u0009tab\""), std::string::npos);
    EXPECT_NE(text.find("\"cat\":\"kernel\",\"name\":\"k\",\"args\":{\"stream\":3,\"failed\":0}"), std::string::npos);
    EXPECT_NE(text.find("\"name\":\"host->device\",\"args\":{\"bytes\":4096,\"device_address\":\"0x300000001000\"}"),
              std::string::npos);
    EXPECT_NE(text.find("\"name\":\"read fault\",\"args\":{\"address\":\"0x300000002000\"}"), std::string::npos);
    EXPECT_NE(text.find("\"name\":\"stream 3\""), std::string::npos);
    EXPECT_NE(text.find("\"name\":\"copies host->device\""), std::string::npos);
    EXPECT_NE(text.find("\"name\":\"device sim\""), std::string::npos);
    EXPECT_NE(text.find("\"otherData\":{\"events\":1000,\"dropped\":4}"), std::string::npos);
    EXPECT_EQ(count(text, "\"ph\":\"X\""), capacity);
}

}  // namespace
