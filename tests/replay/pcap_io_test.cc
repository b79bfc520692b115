// PcapReader/PcapWriter: ns and µs round trips, snap length, and clear errors on bad files.
#include "replay/pcap_io.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/replay/temp_dir_test.h"

namespace twinlane::replay {
namespace {

class PcapIoTest : public testing::TempDirTest {
  protected:
    static std::vector<uint8_t> frame(size_t length, uint8_t seed) {
        std::vector<uint8_t> bytes(length);
        for (size_t i = 0; i < length; ++i)
            bytes[i] = static_cast<uint8_t>(seed + i * 7);
        return bytes;
    }

    static void write_bytes(const std::string& file, const std::vector<uint8_t>& bytes,
                            size_t length) {
        std::ofstream out(file, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(length));
    }
    static void write_bytes(const std::string& file, const std::vector<uint8_t>& bytes) {
        write_bytes(file, bytes, bytes.size());
    }
};

const uint64_t kTimestamps[] = {0, 999, 1'000'000'001, 1'700'000'000'123'456'789ULL};

TEST_F(PcapIoTest, NanosecondRoundTripKeepsTimestampsBytesAndLengths) {
    {
        PcapWriter writer(path("ns.pcap"));
        for (size_t i = 0; i < std::size(kTimestamps); ++i) {
            writer.write(kTimestamps[i], frame(60 + i * 500, static_cast<uint8_t>(i)));
        }
        writer.close();
        EXPECT_EQ(writer.records_written(), std::size(kTimestamps));
    }
    PcapReader reader(path("ns.pcap"));
    PcapRecord record;
    for (size_t i = 0; i < std::size(kTimestamps); ++i) {
        ASSERT_TRUE(reader.next(record)) << i;
        EXPECT_EQ(record.timestamp_ns, kTimestamps[i]);
        const auto expected = frame(60 + i * 500, static_cast<uint8_t>(i));
        EXPECT_EQ(record.wire_length, expected.size());
        EXPECT_EQ(std::vector<uint8_t>(record.captured.begin(), record.captured.end()), expected);
    }
    EXPECT_FALSE(reader.next(record));
    EXPECT_EQ(reader.records_read(), std::size(kTimestamps));
}

TEST_F(PcapIoTest, MicrosecondFileReadsBackAsWholeMicrosecondsInNanoseconds) {
    {
        PcapWriter writer(path("us.pcap"), TimestampPrecision::microsecond);
        for (uint64_t ts : kTimestamps)
            writer.write(ts, frame(100, 1));
    }
    // The µs magic number must be on disk: other tools rely on it to pick the resolution.
    std::ifstream in(path("us.pcap"), std::ios::binary);
    uint32_t magic = 0;
    in.read(reinterpret_cast<char*>(&magic), sizeof(magic));
    EXPECT_EQ(magic, 0xA1B2C3D4U);

    PcapReader reader(path("us.pcap"));
    PcapRecord record;
    for (uint64_t ts : kTimestamps) {
        ASSERT_TRUE(reader.next(record));
        EXPECT_EQ(record.timestamp_ns, ts / 1000 * 1000);
    }
    EXPECT_FALSE(reader.next(record));
}

TEST_F(PcapIoTest, NanosecondFileHasNanosecondMagic) {
    { PcapWriter writer(path("magic.pcap")); }
    std::ifstream in(path("magic.pcap"), std::ios::binary);
    uint32_t magic = 0;
    in.read(reinterpret_cast<char*>(&magic), sizeof(magic));
    EXPECT_EQ(magic, 0xA1B23C4DU);
}

TEST_F(PcapIoTest, SnapLengthCutsCaptureButKeepsWireLength) {
    {
        PcapWriter writer(path("snap.pcap"), TimestampPrecision::nanosecond, 128);
        writer.write(5, frame(1500, 3));
        writer.write(6, frame(64, 4));
    }
    PcapReader reader(path("snap.pcap"));
    EXPECT_EQ(reader.snap_length(), 128U);
    PcapRecord record;
    ASSERT_TRUE(reader.next(record));
    EXPECT_EQ(record.captured.size(), 128U);
    EXPECT_EQ(record.wire_length, 1500U);
    EXPECT_EQ(record.captured[127], frame(1500, 3)[127]);
    ASSERT_TRUE(reader.next(record));
    EXPECT_EQ(record.captured.size(), 64U);
    EXPECT_EQ(record.wire_length, 64U);
}

TEST_F(PcapIoTest, MissingFileErrorNamesTheFile) {
    try {
        PcapReader reader(path("does-not-exist.pcap"));
        FAIL() << "expected PcapError";
    } catch (const PcapError& error) {
        EXPECT_NE(std::string(error.what()).find("does-not-exist.pcap"), std::string::npos);
    }
}

TEST_F(PcapIoTest, GarbageFileIsRejectedAtOpen) {
    write_bytes(path("garbage.pcap"), std::vector<uint8_t>(64, 0x5A));
    EXPECT_THROW(PcapReader reader(path("garbage.pcap")), PcapError);
}

// A capture stopped mid-write ends inside its last record: the records before it are read,
// then the input ends and says why. Cut in the record's bytes and in its header.
TEST_F(PcapIoTest, FileEndingInsideARecordEndsTheInputAfterTheGoodOnes) {
    {
        PcapWriter writer(path("full.pcap"));
        writer.write(1, frame(200, 1));
        writer.write(2, frame(200, 2));
    }
    std::ifstream in(path("full.pcap"), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    ASSERT_EQ(bytes.size(), 24U + 2 * (16 + 200));
    for (size_t cut : {size_t{50}, size_t{200 + 8}}) {  // into the frame; into the header
        const std::string name = "cut" + std::to_string(cut) + ".pcap";
        write_bytes(path(name), bytes, bytes.size() - cut);
        PcapReader reader(path(name));
        PcapRecord record;
        ASSERT_TRUE(reader.next(record)) << cut;
        EXPECT_EQ(record.timestamp_ns, 1U);
        EXPECT_TRUE(reader.truncated_tail().empty());
        EXPECT_FALSE(reader.next(record)) << cut;
        EXPECT_NE(reader.truncated_tail().find("truncated"), std::string::npos)
            << cut << ": " << reader.truncated_tail();
        EXPECT_EQ(reader.records_read(), 1U);
    }
}

// A record whose length cannot be, with more file after it, is corruption, not a cut tail.
TEST_F(PcapIoTest, ImpossibleRecordLengthInTheMiddleIsAnErrorNamingTheFile) {
    {
        PcapWriter writer(path("full.pcap"));
        for (uint64_t t = 1; t <= 3; ++t)
            writer.write(t, frame(200, uint8_t(t)));
    }
    std::ifstream in(path("full.pcap"), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    const size_t second = 24 + 16 + 200;
    const uint32_t huge = 0x7FFFFFFF;
    std::memcpy(&bytes[second + 8], &huge, sizeof huge);   // caplen
    std::memcpy(&bytes[second + 12], &huge, sizeof huge);  // len
    write_bytes(path("bad.pcap"), bytes);
    PcapReader reader(path("bad.pcap"));
    PcapRecord record;
    ASSERT_TRUE(reader.next(record));
    try {
        reader.next(record);
        FAIL() << "expected PcapError";
    } catch (const PcapError& error) {
        EXPECT_NE(std::string(error.what()).find("bad.pcap"), std::string::npos) << error.what();
    }
}

// Classic pcaps in regular files are read in place: records outlive next(), and a file of the
// other byte order reads the same (both are what libpcap hands out for them).
TEST_F(PcapIoTest, MappedRecordsOutliveNextAndSwappedFilesReadTheSame) {
    {
        PcapWriter writer(path("ns.pcap"));
        for (size_t i = 0; i < std::size(kTimestamps); ++i)
            writer.write(kTimestamps[i], frame(60 + i * 500, static_cast<uint8_t>(i)), 9000);
        writer.close();
    }
    std::ifstream in(path("ns.pcap"), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    // Byte-swap the file header's fields and every record header's four words.
    std::vector<uint8_t> swapped = bytes;
    auto swap_at = [&swapped](size_t offset, size_t width) {
        std::reverse(swapped.begin() + static_cast<long>(offset),
                     swapped.begin() + static_cast<long>(offset + width));
    };
    swap_at(0, 4);
    swap_at(4, 2);
    swap_at(6, 2);
    for (size_t offset = 8; offset < 24; offset += 4)
        swap_at(offset, 4);
    for (size_t offset = 24; offset < bytes.size();) {
        uint32_t caplen;
        std::memcpy(&caplen, bytes.data() + offset + 8, sizeof caplen);
        for (size_t word = 0; word < 4; ++word)
            swap_at(offset + word * 4, 4);
        offset += 16 + caplen;
    }
    write_bytes(path("swapped.pcap"), swapped);

    for (const char* name : {"ns.pcap", "swapped.pcap"}) {
        PcapReader reader(path(name));
        std::vector<PcapRecord> records;
        PcapRecord record;
        while (reader.next(record)) {
            EXPECT_TRUE(reader.record_outlives_next()) << name;
            records.push_back(record);
        }
        ASSERT_EQ(records.size(), std::size(kTimestamps)) << name;
        for (size_t i = 0; i < records.size(); ++i) {
            EXPECT_EQ(records[i].timestamp_ns, kTimestamps[i]) << name;
            EXPECT_EQ(records[i].wire_length, 9000u) << name;
            const auto expected = frame(60 + i * 500, static_cast<uint8_t>(i));
            EXPECT_TRUE(std::equal(records[i].captured.begin(), records[i].captured.end(),
                                   expected.begin(), expected.end()))
                << name << " record " << i;
        }
    }
}

// Other link types that are read (cooked, raw IP, loopback): pcap_linktype_test.cc.
TEST_F(PcapIoTest, UnsupportedLinkTypeIsRejected) {
    // Classic pcap header, little endian, µs, snaplen 65535, linktype 105 (IEEE 802.11).
    std::vector<uint8_t> header = {0xD4, 0xC3, 0xB2, 0xA1, 2,    0,    4, 0, 0,   0, 0, 0,
                                   0,    0,    0,    0,    0xFF, 0xFF, 0, 0, 105, 0, 0, 0};
    write_bytes(path("wifi.pcap"), header);
    try {
        PcapReader reader(path("wifi.pcap"));
        FAIL() << "expected PcapError";
    } catch (const PcapError& error) {
        EXPECT_NE(std::string(error.what()).find("IEEE802_11"), std::string::npos);
    }
}

TEST_F(PcapIoTest, UnwritablePathThrows) {
    EXPECT_THROW(PcapWriter writer(path("no-such-dir/out.pcap")), PcapError);
}

}  // namespace
}  // namespace twinlane::replay
