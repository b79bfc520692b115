#include "replay/pcap_io.h"

#include <fcntl.h>
#include <pcap/pcap.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace twinlane::replay {

PcapReader::PcapReader(const std::string& path) : path_(path) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    handle_ =
        pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (handle_ == nullptr) {
        throw PcapError("cannot read pcap '" + path + "': " + errbuf);
    }
    if (pcap_datalink(handle_) != DLT_EN10MB) {
        const int linktype = pcap_datalink(handle_);
        const char* name = pcap_datalink_val_to_name(linktype);
        pcap_close(handle_);
        handle_ = nullptr;
        throw PcapError("pcap '" + path + "' has link type " + (name ? name : "?") + " (" +
                        std::to_string(linktype) + "), only Ethernet (EN10MB) is supported");
    }
    snap_length_ = static_cast<uint32_t>(pcap_snapshot(handle_));
    map_file();
}

PcapReader::~PcapReader() {
    if (map_ != nullptr) munmap(const_cast<uint8_t*>(map_), map_size_);
    if (handle_ != nullptr) pcap_close(handle_);
}

namespace {
constexpr size_t kFileHeaderBytes = 24;
constexpr size_t kRecordHeaderBytes = 16;
// libpcap's largest caplen for Ethernet (MAXIMUM_SNAPLEN); above it libpcap reports an error.
constexpr uint32_t kMaxCaplen = 262144;

uint32_t load32(const uint8_t* p, bool swapped) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return swapped ? __builtin_bswap32(v) : v;
}
}  // namespace

// libpcap copies every record (fread) into its buffer, whole frames included: for a file of
// jumbo frames that copy and its system calls cost more than the replay itself. A classic
// pcap in a regular file is read in place instead; libpcap has already checked its header.
void PcapReader::map_file() {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<size_t>(st.st_size) < kFileHeaderBytes) {
        ::close(fd);
        return;
    }
    const auto size = static_cast<size_t>(st.st_size);
    void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) return;
    const auto* bytes = static_cast<const uint8_t*>(map);
    uint32_t magic;
    std::memcpy(&magic, bytes, sizeof magic);
    switch (magic) {
    case 0xa1b2c3d4: break;
    case 0xa1b23c4d: nanosecond_ = true; break;
    case 0xd4c3b2a1: swapped_ = true; break;
    case 0x4d3cb2a1: swapped_ = nanosecond_ = true; break;
    default:  // pcapng or a variant: libpcap reads it
        munmap(map, size);
        return;
    }
    // Version 2.4 only: libpcap swaps caplen and len in some older files.
    uint16_t version[2];
    std::memcpy(version, bytes + 4, sizeof version);
    if (swapped_) {
        version[0] = __builtin_bswap16(version[0]);
        version[1] = __builtin_bswap16(version[1]);
    }
    if (version[0] != 2 || version[1] != 4) {
        munmap(map, size);
        return;
    }
    madvise(map, size, MADV_SEQUENTIAL);
    map_ = bytes;
    map_size_ = size;
    offset_ = kFileHeaderBytes;
    reading_mapped_ = true;
}

bool PcapReader::next(PcapRecord& record) {
    if (reading_mapped_ && next_mapped(record)) return true;
    last_mapped_ = false;
    if (reading_mapped_) return false;  // clean end of the mapped file
    return next_libpcap(record);
}

// Returns false at the clean end of the file, or with reading_mapped_ cleared when libpcap
// must read on from this record (it then finds what is wrong and says so, as it would have).
bool PcapReader::next_mapped(PcapRecord& record) {
    if (offset_ == map_size_) return false;
    const size_t left = map_size_ - offset_;
    const uint8_t* header = map_ + offset_;
    if (left >= kRecordHeaderBytes) {
        const uint32_t caplen = load32(header + 8, swapped_);
        const uint32_t len = load32(header + 12, swapped_);
        const uint32_t seconds = load32(header, swapped_);
        const uint32_t fraction = load32(header + 4, swapped_);
        // libpcap's record timestamps are signed 32-bit: leave the sign bit to it.
        if (caplen <= snap_length_ && caplen <= kMaxCaplen &&
            left - kRecordHeaderBytes >= caplen && seconds < 0x80000000u &&
            fraction < 0x80000000u) {
            if (caplen > len) {
                throw PcapError("corrupt pcap '" + path_ + "': record " +
                                std::to_string(records_read_) + " has caplen " +
                                std::to_string(caplen) + " > wire length " + std::to_string(len));
            }
            // As libpcap with nanosecond precision: microseconds scaled up.
            record.timestamp_ns = uint64_t{seconds} * 1'000'000'000ULL +
                                  (nanosecond_ ? uint64_t{fraction} : uint64_t{fraction} * 1000);
            record.wire_length = len;
            record.captured = std::span<const uint8_t>(header + kRecordHeaderBytes, caplen);
            offset_ += kRecordHeaderBytes + caplen;
            ++records_read_;
            last_mapped_ = true;
            return true;
        }
    }
    // Something unusual: libpcap reads on from this record.
    reading_mapped_ = false;
    FILE* file = pcap_file(handle_);
    if (file == nullptr || fseeko(file, static_cast<off_t>(offset_), SEEK_SET) != 0) {
        throw PcapError("cannot read pcap '" + path_ + "' after record " +
                        std::to_string(records_read_) + ": seek failed");
    }
    return false;
}

bool PcapReader::next_libpcap(PcapRecord& record) {
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    const int status = pcap_next_ex(handle_, &header, &data);
    if (status == PCAP_ERROR_BREAK) return false;  // end of file
    if (status != 1) {
        throw PcapError("corrupt pcap '" + path_ + "' after record " +
                        std::to_string(records_read_) + ": " + pcap_geterr(handle_));
    }
    if (header->caplen > header->len) {
        throw PcapError("corrupt pcap '" + path_ + "': record " + std::to_string(records_read_) +
                        " has caplen " + std::to_string(header->caplen) + " > wire length " +
                        std::to_string(header->len));
    }
    // With nanosecond precision requested, libpcap stores nanoseconds in tv_usec.
    record.timestamp_ns = static_cast<uint64_t>(header->ts.tv_sec) * 1'000'000'000ULL +
                          static_cast<uint64_t>(header->ts.tv_usec);
    record.wire_length = header->len;
    record.captured = std::span<const uint8_t>(data, header->caplen);
    ++records_read_;
    return true;
}

PcapWriter::PcapWriter(const std::string& path, TimestampPrecision precision, uint32_t snap_length)
    : path_(path), precision_(precision), snap_length_(snap_length) {
    const u_int libpcap_precision = precision == TimestampPrecision::nanosecond
                                        ? PCAP_TSTAMP_PRECISION_NANO
                                        : PCAP_TSTAMP_PRECISION_MICRO;
    handle_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, static_cast<int>(snap_length),
                                                   libpcap_precision);
    if (handle_ == nullptr) throw PcapError("cannot create pcap handle for '" + path + "'");
    dumper_ = pcap_dump_open(handle_, path.c_str());
    if (dumper_ == nullptr) {
        const std::string reason = pcap_geterr(handle_);
        pcap_close(handle_);
        handle_ = nullptr;
        throw PcapError("cannot write pcap '" + path + "': " + reason);
    }
}

PcapWriter::~PcapWriter() {
    try {
        close();
    } catch (const PcapError&) {
        // A destructor cannot report; callers that care call close() themselves.
    }
}

void PcapWriter::write(uint64_t timestamp_ns, std::span<const uint8_t> frame,
                       uint32_t wire_length) {
    if (dumper_ == nullptr) throw PcapError("pcap '" + path_ + "' is already closed");
    pcap_pkthdr header{};
    header.ts.tv_sec = static_cast<time_t>(timestamp_ns / 1'000'000'000ULL);
    const uint64_t sub_second_ns = timestamp_ns % 1'000'000'000ULL;
    header.ts.tv_usec = static_cast<suseconds_t>(
        precision_ == TimestampPrecision::nanosecond ? sub_second_ns : sub_second_ns / 1000);
    header.caplen = static_cast<uint32_t>(std::min<size_t>(frame.size(), snap_length_));
    header.len = std::max<uint32_t>(wire_length, static_cast<uint32_t>(frame.size()));
    pcap_dump(reinterpret_cast<u_char*>(dumper_), &header, frame.data());
    ++records_written_;
}

void PcapWriter::close() {
    if (dumper_ == nullptr) return;
    FILE* file = pcap_dump_file(dumper_);
    const bool write_failed = pcap_dump_flush(dumper_) != 0 || std::ferror(file) != 0;
    const int saved_errno = errno;
    pcap_dump_close(dumper_);
    pcap_close(handle_);
    dumper_ = nullptr;
    handle_ = nullptr;
    if (write_failed) {
        throw PcapError("write error on pcap '" + path_ + "': " + std::strerror(saved_errno));
    }
}

}  // namespace twinlane::replay
