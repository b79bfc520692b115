// Streaming pcap reader and writer over libpcap, with nanosecond timestamps throughout.
//
// Contract:
//   PcapReader opens a classic pcap file (microsecond or nanosecond variant; libpcap converts
//   both to ns), requires Ethernet (DLT_EN10MB) and hands out one record at a time: the
//   captured bytes (caplen) and the original wire length, which is larger for snapped frames.
//   The record's bytes stay valid until the next call to next(), or, when
//   record_outlives_next() says so, as long as the reader. A classic pcap that is a regular
//   file is memory-mapped and its records are handed out in place (no copy of the frames);
//   at anything unusual in a record (truncation, caplen above the snap length) and for every
//   other file (pcapng, pipes) libpcap reads it, with libpcap's behaviour and messages.
//   Missing, unreadable, non-Ethernet or corrupt/truncated files throw PcapError whose message
//   names the file and libpcap's reason.
//   PcapWriter writes an Ethernet pcap in nanosecond (default) or microsecond resolution
//   (µs output truncates the ns timestamp; tests use it to produce µs files). Frames longer
//   than the snap length are cut and keep their wire length. close() flushes and reports
//   write errors; the destructor closes quietly.
// Thread-safety: none; one object per thread.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

struct pcap;
struct pcap_dumper;

namespace twinlane::replay {

class PcapError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

enum class TimestampPrecision { microsecond, nanosecond };

struct PcapRecord {
    uint64_t timestamp_ns = 0;
    uint32_t wire_length = 0;           // bytes on the wire (pcap "len")
    std::span<const uint8_t> captured;  // captured bytes (pcap "caplen"), <= wire_length
};

class PcapReader {
  public:
    explicit PcapReader(const std::string& path);
    ~PcapReader();
    PcapReader(const PcapReader&) = delete;
    PcapReader& operator=(const PcapReader&) = delete;

    // Fills `record` and returns true, or returns false at a clean end of file.
    bool next(PcapRecord& record);

    // Whether the record last returned by next() stays valid after the next call (it lies
    // in the file's mapping), so that records can be gathered into bursts.
    bool record_outlives_next() const { return last_mapped_; }

    uint32_t snap_length() const { return snap_length_; }
    uint64_t records_read() const { return records_read_; }

  private:
    void map_file();
    bool next_mapped(PcapRecord& record);
    bool next_libpcap(PcapRecord& record);

    std::string path_;
    pcap* handle_ = nullptr;
    uint32_t snap_length_ = 0;
    uint64_t records_read_ = 0;
    // The mapped file while records are read from it (reading_mapped_), kept until the end.
    const uint8_t* map_ = nullptr;
    size_t map_size_ = 0;
    size_t offset_ = 0;  // of the next record header in the mapping
    bool reading_mapped_ = false;
    bool last_mapped_ = false;
    bool swapped_ = false;     // the file's byte order is not ours
    bool nanosecond_ = false;  // the file's timestamps are in ns (else µs)
};

class PcapWriter {
  public:
    static constexpr uint32_t kDefaultSnapLength = 65535;

    PcapWriter(const std::string& path,
               TimestampPrecision precision = TimestampPrecision::nanosecond,
               uint32_t snap_length = kDefaultSnapLength);
    ~PcapWriter();
    PcapWriter(const PcapWriter&) = delete;
    PcapWriter& operator=(const PcapWriter&) = delete;

    // `wire_length` 0 means frame.size().
    void write(uint64_t timestamp_ns, std::span<const uint8_t> frame, uint32_t wire_length = 0);
    void close();

    uint64_t records_written() const { return records_written_; }

  private:
    std::string path_;
    TimestampPrecision precision_;
    uint32_t snap_length_;
    pcap* handle_ = nullptr;
    pcap_dumper* dumper_ = nullptr;
    uint64_t records_written_ = 0;
};

}  // namespace twinlane::replay
