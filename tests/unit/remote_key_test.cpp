// The remote device's keyed hash (FIPS 180-4 and RFC 4231 test vectors)
// and its key file rules.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "backend/remote/key_file.h"
#include "backend/remote/keyed_hash.h"
#include "support/status.h"

using namespace adsm::remote;

namespace {

std::string sha(const std::string &s) { return hex(sha256(s.data(), s.size())); }

std::string hmac(const std::string &key, const std::string &data) {
    return hex(hmac_sha256(key, {{data.data(), data.size()}}));
}

// A file with `content` and `mode`, removed at the end of the test.
class KeyFile {
public:
    KeyFile(const std::string &content, mode_t mode) {
        char tmpl[] = "/tmp/adsm-key-test-XXXXXX";
        int fd = mkstemp(tmpl);
        EXPECT_GE(fd, 0);
        path_ = tmpl;
        EXPECT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
        close(fd);
        chmod(path_.c_str(), mode);
    }
    ~KeyFile() { unlink(path_.c_str()); }
    const char *path() const { return path_.c_str(); }

private:
    std::string path_;
};

}  // namespace

TEST(KeyedHashTest, Sha256MatchesTheStandardsVectors) {
    EXPECT_EQ(sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    // A million 'a', fed in uneven pieces.
    Sha256 s;
    std::string piece(977, 'a');
    size_t left = 1000000;
    while (left) {
        size_t n = std::min(left, piece.size());
        s.update(piece.data(), n);
        left -= n;
    }
    EXPECT_EQ(hex(s.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(KeyedHashTest, HmacMatchesRfc4231) {
    EXPECT_EQ(hmac(std::string(20, '\x0b'), "Hi There"),
              "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    EXPECT_EQ(hmac("Jefe", "what do ya want for nothing?"),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    EXPECT_EQ(hmac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
              "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    // The parts hash as their concatenation.
    std::string a = "what do ya ", b = "want for nothing?";
    EXPECT_EQ(hex(hmac_sha256("Jefe", {{a.data(), a.size()}, {b.data(), b.size()}})),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    Digest x = sha256("x", 1), y = sha256("y", 1);
    EXPECT_TRUE(same_digest(x, x));
    EXPECT_FALSE(same_digest(x, y));
}

TEST(KeyFileTest, OnlyTheOwnersFileWithEnoughKeyIsAccepted) {
    std::string key;
    KeyFile good("0123456789abcdef0123456789abcdef\n", 0600);
    ASSERT_EQ(load_key(good.path(), &key), adsmSuccess) << adsm::last_detail();
    EXPECT_EQ(key, "0123456789abcdef0123456789abcdef") << "the trailing newline is not part of the key";

    KeyFile readable("0123456789abcdef0123456789abcdef", 0644);
    EXPECT_EQ(load_key(readable.path(), &key), adsmErrorInvalidValue);
    EXPECT_NE(std::string(adsm::last_detail()).find("chmod 600"), std::string::npos) << adsm::last_detail();
    EXPECT_TRUE(key.empty());

    KeyFile group_writable("0123456789abcdef0123456789abcdef", 0620);
    EXPECT_EQ(load_key(group_writable.path(), &key), adsmErrorInvalidValue);

    KeyFile short_key("too short\n", 0600);
    EXPECT_EQ(load_key(short_key.path(), &key), adsmErrorInvalidValue);
    EXPECT_NE(std::string(adsm::last_detail()).find("at least 16"), std::string::npos) << adsm::last_detail();

    EXPECT_EQ(load_key("/nonexistent/adsm-key", &key), adsmErrorInvalidValue);
    EXPECT_EQ(load_key(nullptr, &key), adsmErrorInvalidValue);

    std::string link = std::string(good.path()) + ".link";
    ASSERT_EQ(symlink(good.path(), link.c_str()), 0);
    EXPECT_EQ(load_key(link.c_str(), &key), adsmErrorInvalidValue) << "a link could be changed under the server";
    unlink(link.c_str());
}
