// PcapReader on files that claim what cannot be: a snap length of 2^31 - 1 in a 100-byte file
// (memory must follow the records, not the claim), timestamps from 2038 on (ts_sec is unsigned:
// they must not wrap into the past), and timestamp fractions of a second or more (refused,
// naming the record). Each case through the mapped reader (classic Ethernet pcap in a regular
// file) and through libpcap (other link types, pcapng, and a classic Ethernet file once libpcap
// reads on), in both byte orders and resolutions.
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

constexpr uint32_t kLinktypeEthernet = 1;
constexpr uint32_t kHugeSnapLength = 0x7fffffff;

uint64_t peak_rss_bytes() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is in KiB on Linux
}

Bytes ethernet_frame(size_t payload_bytes) {
    return concat({{0x02, 0, 0, 0, 0, 0x01, 0x02, 0, 0, 0, 0, 0x02},
                   big16(0x0800),
                   ipv4_udp(50051, payload_bytes)});
}

class PcapHostileTest : public testing::TempDirTest {
  protected:
    // Every record's timestamp, or the error's message.
    static std::vector<uint64_t> timestamps(const std::string& file, std::string* error) {
        std::vector<uint64_t> stamps;
        try {
            PcapReader reader(file);
            PcapRecord record;
            while (reader.next(record))
                stamps.push_back(record.timestamp_ns);
        } catch (const PcapError& e) {
            *error = e.what();
        }
        return stamps;
    }
};

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

// ts_sec is unsigned 32-bit: 2^31 is 2038-01-19, 2^32 - 1 is 2106-02-07. Read signed, a 2039
// capture departed in 2079 and departures came before arrivals.
TEST_F(PcapHostileTest, SecondsFrom2038OnAreReadUnsigned) {
    const uint32_t seconds[] = {0x7fffffff, 0x80000000, 0x88000000, 0xffffffff};
    for (const ByteOrder order : {ByteOrder::little, ByteOrder::big}) {
        for (const Resolution resolution : {Resolution::microsecond, Resolution::nanosecond}) {
            const uint32_t fraction = resolution == Resolution::microsecond ? 999'999 : 999'999'999;
            const uint64_t fraction_ns =
                resolution == Resolution::microsecond ? 999'999'000 : 999'999'999;
            std::vector<uint64_t> expected;
            PcapFileBytes mapped(kLinktypeEthernet, order, resolution);
            PcapFileBytes raw(kLinktypeRaw, order, resolution);
            // A record above the snap length makes libpcap read the rest of an Ethernet file.
            PcapFileBytes fallback(kLinktypeEthernet, order, resolution, 100);
            fallback.record(1, 0, ethernet_frame(200));
            for (const uint32_t s : seconds) {
                mapped.record(s, fraction, ethernet_frame(10));
                raw.record(s, fraction, ipv4_udp(50051, 10));
                fallback.record(s, fraction, ethernet_frame(10));
                expected.push_back(uint64_t{s} * 1'000'000'000 + fraction_ns);
            }
            mapped.write(path("mapped.pcap"));
            raw.write(path("raw.pcap"));
            fallback.write(path("fallback.pcap"));
            const std::string where = std::string(order == ByteOrder::big ? "big" : "little") +
                                      (resolution == Resolution::nanosecond ? " ns" : " us");
            std::string error;
            EXPECT_EQ(timestamps(path("mapped.pcap"), &error), expected) << where << " " << error;
            EXPECT_EQ(timestamps(path("raw.pcap"), &error), expected) << where << " " << error;
            std::vector<uint64_t> with_first = {1'000'000'000};
            with_first.insert(with_first.end(), expected.begin(), expected.end());
            EXPECT_EQ(timestamps(path("fallback.pcap"), &error), with_first)
                << where << " " << error;
        }
    }
}

// A fraction of a second or more is no time at all: refused, naming the file and the record,
// in every reader path; the largest valid fractions still read.
TEST_F(PcapHostileTest, ImpossibleFractionsAreRefusedNamingTheRecord) {
    struct Case {
        Resolution resolution;
        uint32_t fraction;
        const char* field;
    };
    const Case cases[] = {
        {Resolution::microsecond, 1'000'000, "microsecond field of 1000000"},
        {Resolution::microsecond, 0x80000000, "microsecond field of 2147483648"},
        {Resolution::microsecond, 0xffffffff, "microsecond field of 4294967295"},
        {Resolution::nanosecond, 1'000'000'000, "nanosecond field of 1000000000"},
        {Resolution::nanosecond, 0x80000000, "nanosecond field of 2147483648"},
    };
    for (const Case& c : cases) {
        for (const ByteOrder order : {ByteOrder::little, ByteOrder::big}) {
            const uint32_t last_good =
                c.resolution == Resolution::microsecond ? 999'999 : 999'999'999;
            PcapFileBytes(kLinktypeEthernet, order, c.resolution)
                .record(5, last_good, ethernet_frame(10))
                .record(6, c.fraction, ethernet_frame(10))
                .write(path("mapped.pcap"));
            PcapFileBytes(kLinktypeRaw, order, c.resolution)
                .record(5, last_good, ipv4_udp(50051, 10))
                .record(6, c.fraction, ipv4_udp(50051, 10))
                .write(path("raw.pcap"));
            for (const char* name : {"mapped.pcap", "raw.pcap"}) {
                const std::string where = std::string(name) + " " + c.field;
                std::string error;
                const std::vector<uint64_t> stamps = timestamps(path(name), &error);
                ASSERT_EQ(stamps.size(), 1u) << where;
                EXPECT_EQ(stamps[0], 5'000'000'000 + (c.resolution == Resolution::microsecond
                                                          ? uint64_t{last_good} * 1000
                                                          : uint64_t{last_good}))
                    << where;
                EXPECT_NE(error.find(name), std::string::npos) << where << ": " << error;
                EXPECT_NE(error.find("record 2 "), std::string::npos) << where << ": " << error;
                EXPECT_NE(error.find(c.field), std::string::npos) << where << ": " << error;
            }
        }
    }
}

}  // namespace
}  // namespace twinlane::replay
