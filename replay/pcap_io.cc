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

#include "classifier/byte_order.h"

namespace twinlane::replay {

namespace {
// DLT_RAW is 12 on Linux (libpcap maps a file's LINKTYPE_RAW, 101, to it) and 14 on OpenBSD,
// which appears in files written there.
constexpr int kDltRawOpenBsd = 14;

constexpr size_t kEthernetHeaderBytes = 14;
constexpr size_t kMacBytes = 6;
// libpcap's largest caplen for the link types read here (MAXIMUM_SNAPLEN): it refuses longer
// records. A file header may claim any snap length up to INT_MAX, which libpcap 1.10 keeps.
constexpr uint32_t kMaxCaplen = 262144;
// The converted-record buffer starts at the largest IP packet plus the Ethernet header and
// grows to what records need: sized by a claimed snap length, a 100-byte file took 2.1 GB.
constexpr size_t kInitialFrameBytes = 65535 + kEthernetHeaderBytes;
constexpr uint32_t kFileMagicMicroseconds = 0xa1b2c3d4;
constexpr uint32_t kFileMagicNanoseconds = 0xa1b23c4d;
// Locally administered, for frames whose capture has no MAC addresses.
constexpr uint8_t kDestinationMac[kMacBytes] = {0x02, 0, 0, 0, 0, 0x01};
constexpr uint8_t kDefaultSourceMac[kMacBytes] = {0x02, 0, 0, 0, 0, 0x02};
}  // namespace

PcapReader::PcapReader(const std::string& path) : path_(path) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    handle_ =
        pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (handle_ == nullptr) {
        throw PcapError("cannot read pcap '" + path + "': " + errbuf);
    }
    link_type_ = pcap_datalink(handle_);
    snap_length_ = std::min(static_cast<uint32_t>(pcap_snapshot(handle_)), kMaxCaplen);
    // pcapng sections are version 1.x; classic pcap 2.x (and DG/UX's 543).
    pcapng_ = pcap_major_version(handle_) == 1;
    if (!pcapng_) read_precision();
    switch (link_type_) {
        case DLT_EN10MB:
            map_file();
            return;
        case DLT_LINUX_SLL:
            link_layer_ = LinkLayer::linux_sll;
            link_header_bytes_ = 16;
            break;
        case DLT_LINUX_SLL2:
            link_layer_ = LinkLayer::linux_sll2;
            link_header_bytes_ = 20;
            break;
        case DLT_RAW:
        case kDltRawOpenBsd:
        case DLT_IPV4:
        case DLT_IPV6:
            link_layer_ = LinkLayer::raw_ip;
            link_header_bytes_ = 0;
            break;
        case DLT_NULL:
            link_layer_ = LinkLayer::null;
            link_header_bytes_ = 4;
            break;
        case DLT_LOOP:
            link_layer_ = LinkLayer::loop;
            link_header_bytes_ = 4;
            break;
        default: {
            const char* name = pcap_datalink_val_to_name(link_type_);
            pcap_close(handle_);
            handle_ = nullptr;
            throw PcapError("pcap '" + path + "' has link type " + (name ? name : "?") + " (" +
                            std::to_string(link_type_) +
                            "); supported: EN10MB (1), LINUX_SLL (113), LINUX_SLL2 (276), RAW (12, "
                            "14, 101), IPV4 (228), IPV6 (229), NULL (0), LOOP (108)");
        }
    }
    // Records of other link types are rewritten as Ethernet frames into this one buffer.
    swapped_ = pcap_is_swapped(handle_) == 1;
    ethernet_frame_.assign(
        std::min(size_t{snap_length_} + kEthernetHeaderBytes, kInitialFrameBytes), 0);
    std::memcpy(ethernet_frame_.data(), kDestinationMac, sizeof kDestinationMac);
}

PcapReader::~PcapReader() {
    if (map_ != nullptr) munmap(const_cast<uint8_t*>(map_), map_size_);
    if (handle_ != nullptr) pcap_close(handle_);
}

namespace {
constexpr size_t kFileHeaderBytes = 24;
constexpr size_t kRecordHeaderBytes = 16;

uint32_t load32(const uint8_t* p, bool swapped) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return swapped ? __builtin_bswap32(v) : v;
}

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
// Below this an Ethernet "type" is a length; Linux cooked headers put ARPHRD-specific protocol
// numbers there (0x0001 802.3, 0x0004 802.2 LLC, netlink families, ...): not IP.
constexpr uint16_t kSmallestEtherType = 0x0600;

// `wire_length` (>= `link_header_bytes`) with the link header replaced by an Ethernet header;
// saturates, as libpcap does not bound a record's wire length.
uint32_t ethernet_wire_length(uint32_t wire_length, uint32_t link_header_bytes) {
    const uint64_t length = uint64_t{wire_length} - link_header_bytes + kEthernetHeaderBytes;
    return static_cast<uint32_t>(std::min<uint64_t>(length, UINT32_MAX));
}

uint16_t ethertype_of_ip_version(uint8_t first_byte) {
    switch (first_byte >> 4) {
        case 4:
            return kEtherTypeIpv4;
        case 6:
            return kEtherTypeIpv6;
        default:
            return 0;
    }
}

// BSD loopback address families; AF_INET6 differs between the systems that write them.
uint16_t ethertype_of_address_family(uint32_t family) {
    switch (family) {
        case 2:
            return kEtherTypeIpv4;  // AF_INET everywhere
        case 10:                    // Linux
        case 24:                    // NetBSD, OpenBSD
        case 28:                    // FreeBSD
        case 30:
            return kEtherTypeIpv6;  // macOS
        default:
            return 0;
    }
}
}  // namespace

// A classic file's timestamp resolution, from its magic (libpcap does not tell): the error
// about an impossible fraction then names the field as the file has it. Read with pread, which
// works where libpcap's stream is a regular file (also stdin redirected from one) and moves no
// offset; unknown for pipes.
void PcapReader::read_precision() {
    FILE* file = pcap_file(handle_);
    uint32_t magic = 0;
    if (file == nullptr || pread(fileno(file), &magic, sizeof magic, 0) != sizeof magic) return;
    if (magic == kFileMagicNanoseconds || magic == __builtin_bswap32(kFileMagicNanoseconds)) {
        precision_ = Precision::nanosecond;
    } else if (magic == kFileMagicMicroseconds ||
               magic == __builtin_bswap32(kFileMagicMicroseconds)) {
        precision_ = Precision::microsecond;
    }
}

// The record about to be counted, 1-based as Wireshark numbers frames.
std::string PcapReader::record_name() const {
    return "pcap '" + path_ + "': record " + std::to_string(records_read_ + 1);
}

// ts_sec is unsigned in the file format (a 2039 capture is valid until 2106); libpcap's
// record header holds it and the fraction as signed 32-bit values, so a capture from 2038 on
// came out in the past, and a fraction of 2^31 or more wrapped. A fraction of a second or
// more cannot be: the file is damaged, and no arrival time can be made of it.
uint64_t PcapReader::timestamp_ns(uint64_t seconds, int64_t fraction_ns) const {
    if (fraction_ns < 0 || fraction_ns >= 1'000'000'000) {
        std::string field =
            "a microsecond field of 1000000 or more, or a nanosecond field of "
            "1000000000 or more";
        if (precision_ == Precision::microsecond) {
            field =
                "a microsecond field of " +
                std::to_string(static_cast<uint32_t>(static_cast<int32_t>(fraction_ns / 1000))) +
                " (at most 999999)";
        } else if (precision_ == Precision::nanosecond) {
            field = "a nanosecond field of " +
                    std::to_string(static_cast<uint32_t>(static_cast<int32_t>(fraction_ns))) +
                    " (at most 999999999)";
        }
        throw PcapError(record_name() + " has an impossible timestamp: " + field +
                        ", a second or more (a damaged file?)");
    }
    constexpr uint64_t kLastSecond = (UINT64_MAX - 999'999'999) / 1'000'000'000;
    if (seconds > kLastSecond) {  // pcapng only: a classic pcap's seconds are 32-bit
        throw PcapError(record_name() + " has a timestamp of " + std::to_string(seconds) +
                        " s, beyond what nanoseconds since 1970 hold in 64 bits (year 2554)");
    }
    return seconds * 1'000'000'000ULL + static_cast<uint64_t>(fraction_ns);
}

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
        case kFileMagicMicroseconds:
            break;
        case kFileMagicNanoseconds:
            nanosecond_ = true;
            break;
        case __builtin_bswap32(kFileMagicMicroseconds):
            swapped_ = true;
            break;
        case __builtin_bswap32(kFileMagicNanoseconds):
            swapped_ = nanosecond_ = true;
            break;
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
        if (caplen <= snap_length_ && left - kRecordHeaderBytes >= caplen) {
            if (caplen > len) {
                throw PcapError("corrupt " + record_name() + " has caplen " +
                                std::to_string(caplen) + " > wire length " + std::to_string(len));
            }
            // As libpcap with nanosecond precision: microseconds scaled up.
            record.timestamp_ns =
                timestamp_ns(seconds, nanosecond_ ? int64_t{fraction} : int64_t{fraction} * 1000);
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
        // A record cut by the end of the file (tcpdump stopped mid-write, a copy of a capture
        // still being written) ends the input: the records before it are good. Anything
        // else, e.g. a record length that cannot be, has no way to resynchronise.
        FILE* file = pcap_file(handle_);
        if (status == PCAP_ERROR && file != nullptr && std::feof(file)) {
            truncated_tail_ = pcap_geterr(handle_);
            return false;
        }
        const std::string reason = pcap_geterr(handle_);
        // libpcap 1.10 compares the first interface's type as a DLT value (LINKTYPE_RAW, 101,
        // became DLT_RAW, 12) with each next interface's LINKTYPE value: two raw IP interfaces
        // look different. The file is fine; a classic pcap holds it.
        if (link_type_ == DLT_RAW &&
            reason.find("has a type 101 different from the type of the first interface") !=
                std::string::npos) {
            throw PcapError("cannot read '" + path_ + "' after record " +
                            std::to_string(records_read_) +
                            ": its interfaces are all raw IP (LINKTYPE_RAW, 101), which " +
                            pcap_lib_version() + " refuses as different types (\"" + reason +
                            "\"); convert it to a classic pcap, which holds one link type, "
                            "e.g. editcap -F pcap FILE OUT.pcap");
        }
        // libpcap reads a pcapng file as one link type: interfaces of another type (Ethernet
        // and Linux cooked, as `tcpdump -i any` next to `-i eth0` writes) are a limit, not damage.
        if (reason.find("different from the type of the first interface") != std::string::npos) {
            throw PcapError("cannot read '" + path_ + "' after record " +
                            std::to_string(records_read_) + ": " + reason +
                            "; libpcap reads a pcapng file whose interfaces share one link "
                            "type (split it per interface, e.g. tshark -r FILE -Y "
                            "frame.interface_id==0 -w OUT)");
        }
        throw PcapError("corrupt pcap '" + path_ + "' after record " +
                        std::to_string(records_read_) + ": " + reason);
    }
    if (header->caplen > header->len) {
        throw PcapError("corrupt " + record_name() + " has caplen " +
                        std::to_string(header->caplen) + " > wire length " +
                        std::to_string(header->len));
    }
    // With nanosecond precision requested, libpcap stores nanoseconds in tv_usec (a
    // microsecond file's field times 1000). A classic file's seconds were read as a signed
    // 32-bit number: undo the sign extension. pcapng seconds come from a 64-bit count.
    const auto seconds = static_cast<uint64_t>(header->ts.tv_sec);
    record.timestamp_ns = timestamp_ns(pcapng_ ? seconds : static_cast<uint32_t>(seconds),
                                       static_cast<int64_t>(header->ts.tv_usec));
    record.wire_length = header->len;
    record.captured = std::span<const uint8_t>(data, header->caplen);
    ++records_read_;
    if (link_layer_ != LinkLayer::ethernet) convert_to_ethernet(record);
    return true;
}

void PcapReader::convert_to_ethernet(PcapRecord& record) {
    const std::span<const uint8_t> link = record.captured;
    uint8_t* frame = ethernet_frame_.data();
    std::memcpy(frame + kMacBytes, kDefaultSourceMac, kMacBytes);
    if (link.size() < link_header_bytes_) {
        // Cut inside the link header: no ethertype to give. 12 bytes, which the classifier
        // counts as a truncated Ethernet frame (malformed), as it would the Ethernet capture.
        constexpr uint32_t kMacsOnly = 2 * kMacBytes;
        record.captured = std::span<const uint8_t>(frame, kMacsOnly);
        record.wire_length = record.wire_length >= link_header_bytes_
                                 ? ethernet_wire_length(record.wire_length, link_header_bytes_)
                                 : kMacsOnly;
        return;
    }
    uint16_t ethertype = 0;
    switch (link_layer_) {
        case LinkLayer::linux_sll:  // type, ARPHRD, address length, address[8], protocol
            ethertype = classifier::load_be16(link.data() + 14);
            if (classifier::load_be16(link.data() + 4) == kMacBytes)
                std::memcpy(frame + kMacBytes, link.data() + 6, kMacBytes);
            break;
        case LinkLayer::linux_sll2:  // protocol, reserved, ifindex, ARPHRD, type, length,
                                     // address[8]
            ethertype = classifier::load_be16(link.data());
            if (link[11] == kMacBytes) std::memcpy(frame + kMacBytes, link.data() + 12, kMacBytes);
            break;
        case LinkLayer::raw_ip:
            ethertype = link.empty() ? 0 : ethertype_of_ip_version(link[0]);
            break;
        case LinkLayer::null: {
            // Written in the capturing host's byte order, normally the file's; a family with high
            // bits set comes from a host of the other order (as Wireshark reads it).
            uint32_t family = load32(link.data(), swapped_);
            if ((family & 0xFFFF0000u) != 0) family = __builtin_bswap32(family);
            ethertype = ethertype_of_address_family(family);
            break;
        }
        case LinkLayer::loop:
            ethertype = ethertype_of_address_family(classifier::load_be32(link.data()));
            break;
        case LinkLayer::ethernet:
            break;  // not converted
    }
    if (ethertype < kSmallestEtherType) ethertype = 0;
    frame[12] = static_cast<uint8_t>(ethertype >> 8);
    frame[13] = static_cast<uint8_t>(ethertype);
    const std::span<const uint8_t> payload = link.subspan(link_header_bytes_);
    const size_t frame_bytes = kEthernetHeaderBytes + payload.size();
    if (frame_bytes > ethernet_frame_.size()) {
        // Above the snap length libpcap reported (a pcapng interface may have its own, up to
        // libpcap's per-link-type maximum): grow, once per larger size.
        ethernet_frame_.resize(frame_bytes);
        frame = ethernet_frame_.data();
    }
    std::memcpy(frame + kEthernetHeaderBytes, payload.data(), payload.size());
    record.captured = std::span<const uint8_t>(frame, frame_bytes);
    // caplen <= len (checked above), so this is never below the frame handed out.
    record.wire_length = ethernet_wire_length(record.wire_length, link_header_bytes_);
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
