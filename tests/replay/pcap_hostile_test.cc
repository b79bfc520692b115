// PcapReader on files that claim what cannot be: a snap length of 2^31 - 1 in a 100-byte file
// (memory must follow the records, not the claim).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "replay/pcap_io.h"
#include "tests/replay/capture_bytes.h"
#include "tests/replay/temp_dir_test.h"

namespace twinlane::replay {
namespace {

using namespace testing::capture;

constexpr uint32_t kHugeSnapLength = 0x7fffffff;

uint64_t peak_rss_bytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is in KiB on Linux
}

class PcapHostileTest : public testing::TempDirTest {};

// A claimed snap length is not an allocation: 2^31 - 1 made a 100-byte capture allocate
// 2.1 GB (and zero it, for 8 s) for raw IP and Linux cooked files, classic or pcapng.
TEST_F(PcapHostileTest, HugeSnapLengthInATinyFileAllocatesWhatTheRecordsNeed) {
    const Bytes v4 = ipv4_udp(50051, 40);
    PcapFileBytes(kLinktypeRaw, ByteOrder::little, Resolution::microsecond, kHugeSnapLength)
        .record(1, 0, v4)
        .write(path("raw.pcap"));
    PcapFileBytes(kLinktypeLinuxSll, ByteOrder::big, Resolution::nanosecond, kHugeSnapLength)
        .record(1, 0, concat({Bytes(14, 0), big16(0x0800), v4}))
        .write(path("sll.pcap"));
    PcapngFileBytes()
        .interface(kLinktypeRaw, kHugeSnapLength)
        .packet(0, 1, v4)
        .write(path("raw.pcapng"));
    const uint64_t before = peak_rss_bytes();
    for (const char* name : {"raw.pcap", "sll.pcap", "raw.pcapng"}) {
        PcapReader reader(path(name));
        EXPECT_EQ(reader.snap_length(), 262144u) << name;
        PcapRecord record;
        ASSERT_TRUE(reader.next(record)) << name;
        EXPECT_EQ(record.captured.size(), 14 + v4.size()) << name;
        EXPECT_FALSE(reader.next(record)) << name;
    }
    EXPECT_LT(peak_rss_bytes() - before, uint64_t{64} << 20)
        << "peak RSS grew by " << (peak_rss_bytes() - before);
}

// The conversion buffer grows per record, up to libpcap's largest record.
TEST_F(PcapHostileTest, RecordsLargerThanTheFirstBufferStillConvertWhole) {
    const Bytes big = ipv4_udp(50051, 200'000);
    const Bytes small = ipv4_udp(50051, 10);
    PcapFileBytes(kLinktypeRaw, ByteOrder::little, Resolution::nanosecond, kHugeSnapLength)
        .record(1, 0, small)
        .record(1, 1, big)
        .record(1, 2, small)
        .write(path("big.pcap"));
    PcapReader reader(path("big.pcap"));
    PcapRecord record;
    for (const Bytes* expected : {&small, &big, &small}) {
        ASSERT_TRUE(reader.next(record));
        ASSERT_EQ(record.captured.size(), 14 + expected->size());
        EXPECT_TRUE(std::equal(expected->begin(), expected->end(), record.captured.begin() + 14));
    }
    EXPECT_FALSE(reader.next(record));
}

}  // namespace
}  // namespace twinlane::replay
