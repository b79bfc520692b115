// The checked-in fuzz seed corpus is well-formed: every seed (option byte + frame, see
// fuzz_classify.cc) parses without a malformed reason under the options it selects, so the
// fuzzer starts from deep parser states. Path from the CLASSIFIER_CORPUS environment variable.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "classifier/parser.h"

namespace twinlane::classifier {
namespace {

TEST(Corpus, SeedsParseCleanly) {
    const char* directory = std::getenv("CLASSIFIER_CORPUS");
    ASSERT_NE(directory, nullptr) << "set CLASSIFIER_CORPUS to tests/classifier/corpus";
    size_t seeds = 0;
    size_t ip_seeds = 0;
    for (const auto& file : std::filesystem::directory_iterator(directory)) {
        std::ifstream in(file.path(), std::ios::binary);
        const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                         std::istreambuf_iterator<char>());
        ASSERT_GE(bytes.size(), 15u) << file.path();
        ParserOptions options;
        options.vxlan_inner = (bytes[0] & 1) != 0;
        ParsedPacket parsed;
        const uint32_t length = uint32_t(bytes.size() - 1);
        EXPECT_EQ(parse_packet(bytes.data() + 1, length, options, parsed), MalformedReason::none)
            << file.path();
        ++seeds;
        ip_seeds += parsed.ip_version != 0;
    }
    EXPECT_GE(seeds, 10u);
    EXPECT_GE(ip_seeds, seeds - 1);  // all but the ARP seed reach IP
}

}  // namespace
}  // namespace twinlane::classifier
