#include "replay/pcap_io.h"

#include <pcap/pcap.h>

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
}

PcapReader::~PcapReader() {
    if (handle_ != nullptr) pcap_close(handle_);
}

bool PcapReader::next(PcapRecord& record) {
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
