// Streaming pcap reader and writer over libpcap, with nanosecond timestamps throughout.
//
// Contract:
//   PcapReader opens a classic pcap file (microsecond or nanosecond variant; libpcap converts
//   both to ns) or a pcapng file and hands out one record at a time as an Ethernet frame: the
//   captured bytes (caplen) and the original wire length, which is larger for snapped frames.
//   The record's bytes stay valid until the next call to next(), or, when
//   record_outlives_next() says so, as long as the reader.
//   Ethernet (DLT_EN10MB) records are handed out as they are. A classic Ethernet pcap that is
//   a regular file is memory-mapped and its records are handed out in place (no copy of the
//   frames); at anything unusual in a record (truncation, caplen above the snap length) and
//   for every other file (pcapng, pipes) libpcap reads it, with libpcap's behaviour and
//   messages.
//   Other link types are read through libpcap and each record is rewritten into one buffer of
//   the reader (record_outlives_next() is false): the link-layer header is replaced by a
//   14-byte Ethernet header, the bytes after it are copied. Destination MAC 02:00:00:00:00:01;
//   source MAC the sender's link-layer address when a cooked header carries a 6-byte one,
//   else 02:00:00:00:00:02 (both locally administered). The ethertype comes from:
//     LINUX_SLL (113), LINUX_SLL2 (276)  the protocol field, when it is an ethertype (>= 0x0600)
//     RAW (12, 14; 101 in files), IPV4 (228), IPV6 (229)  the IP version of the first byte
//     NULL (0, address family in the file's byte order), LOOP (108, network order)
//                                         AF_INET -> IPv4, AF_INET6 (10, 24, 28, 30) -> IPv6
//   and is 0 otherwise, which the classifier counts as non-IP. The wire length is the
//   original one minus the link header plus 14. A record cut inside its link header becomes
//   a 12-byte frame (MACs only), which the classifier counts as a truncated Ethernet frame.
//   A file that ends inside a record (a capture stopped mid-write) ends the input there:
//   next() returns false and truncated_tail() says why. Missing, unreadable or corrupt files
//   and other link types throw PcapError whose message names the file and the reason
//   (libpcap's, or the link type and the supported ones).
//   Timestamps: a classic file's ts_sec is unsigned 32-bit (valid to 2106); a fraction of a
//   second or more (microseconds >= 1000000, nanoseconds >= 1000000000) throws PcapError
//   naming the record (1-based). Memory: the snap length a file claims is clamped to 262144
//   (libpcap refuses longer records); the conversion buffer grows with the records, not with
//   the claim.
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
#include <vector>

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

    // The file's snap length, at most 262144 (of its link-layer frames; converted frames may
    // differ by the link header's length against the Ethernet header's).
    uint32_t snap_length() const { return snap_length_; }
    uint64_t records_read() const { return records_read_; }
    // Non-empty when the file ended inside a record: libpcap's words for it.
    const std::string& truncated_tail() const { return truncated_tail_; }
    // The file's link type as libpcap reports it (DLT_ value: 1 Ethernet, 113 LINUX_SLL, ...).
    int link_type() const { return link_type_; }

  private:
    enum class LinkLayer : uint8_t { ethernet, linux_sll, linux_sll2, raw_ip, null, loop };

    enum class Precision : uint8_t { unknown, microsecond, nanosecond };

    void read_precision();
    std::string record_name() const;
    uint64_t timestamp_ns(uint64_t seconds, int64_t fraction_ns) const;
    void map_file();
    bool next_mapped(PcapRecord& record);
    bool next_libpcap(PcapRecord& record);
    // Rewrites a non-Ethernet record into ethernet_frame_ (see the contract above).
    void convert_to_ethernet(PcapRecord& record);

    std::string path_;
    pcap* handle_ = nullptr;
    uint32_t snap_length_ = 0;
    uint64_t records_read_ = 0;
    std::string truncated_tail_;
    int link_type_ = 0;
    LinkLayer link_layer_ = LinkLayer::ethernet;
    uint32_t link_header_bytes_ = 0;       // replaced by the Ethernet header (non-Ethernet)
    std::vector<uint8_t> ethernet_frame_;  // the converted record, reused (non-Ethernet)
    // The mapped file while records are read from it (reading_mapped_), kept until the end.
    const uint8_t* map_ = nullptr;
    size_t map_size_ = 0;
    size_t offset_ = 0;  // of the next record header in the mapping
    bool reading_mapped_ = false;
    bool last_mapped_ = false;
    bool swapped_ = false;     // the file's byte order is not ours
    bool nanosecond_ = false;  // the mapped file's timestamps are in ns (else µs)
    bool pcapng_ = false;
    Precision precision_ = Precision::unknown;  // of a classic file read by libpcap
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
