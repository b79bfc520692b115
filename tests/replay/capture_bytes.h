// Capture files written byte by byte for the replay tests: classic pcap in either byte order and
// timestamp resolution, pcapng (little-endian, microsecond timestamps) with any interfaces,
// and the packets inside them. Test-only.
#pragma once

#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

namespace twinlane::replay::testing::capture {

using Bytes = std::vector<uint8_t>;

// Link types as written in files (LINKTYPE_ values).
inline constexpr uint32_t kLinktypeNull = 0;
inline constexpr uint32_t kLinktypeRaw = 101;
inline constexpr uint32_t kLinktypeIeee80211 = 105;
inline constexpr uint32_t kLinktypeLoop = 108;
inline constexpr uint32_t kLinktypeLinuxSll = 113;
inline constexpr uint32_t kLinktypeIpv4 = 228;
inline constexpr uint32_t kLinktypeIpv6 = 229;
inline constexpr uint32_t kLinktypeLinuxSll2 = 276;
// libpcap reports LINKTYPE_RAW as DLT_RAW, 12 on Linux.
inline constexpr int kDltRaw = 12;

enum class ByteOrder { little, big };
enum class Resolution { microsecond, nanosecond };

// A classic pcap written field by field in the chosen byte order.
class PcapFileBytes {
  public:
    PcapFileBytes(uint32_t link_type, ByteOrder order, Resolution resolution,
                  uint32_t snap_length = 65535)
        : order_(order) {
        put32(resolution == Resolution::nanosecond ? 0xA1B23C4D : 0xA1B2C3D4);
        put16(2);
        put16(4);
        put32(0);  // thiszone
        put32(0);  // sigfigs
        put32(snap_length);
        put32(link_type);
    }

    // `wire_length` 0 means the captured size.
    PcapFileBytes& record(uint32_t seconds, uint32_t fraction, const Bytes& captured,
                          uint32_t wire_length = 0) {
        put32(seconds);
        put32(fraction);
        put32(static_cast<uint32_t>(captured.size()));
        put32(wire_length == 0 ? static_cast<uint32_t>(captured.size()) : wire_length);
        bytes_.insert(bytes_.end(), captured.begin(), captured.end());
        return *this;
    }

    void write(const std::string& path) const {
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes_.data()),
                  static_cast<std::streamsize>(bytes_.size()));
    }

  private:
    void put16(uint16_t v) {
        if (order_ == ByteOrder::big) {
            bytes_.push_back(static_cast<uint8_t>(v >> 8));
            bytes_.push_back(static_cast<uint8_t>(v));
        } else {
            bytes_.push_back(static_cast<uint8_t>(v));
            bytes_.push_back(static_cast<uint8_t>(v >> 8));
        }
    }
    void put32(uint32_t v) {
        if (order_ == ByteOrder::big) {
            put16(static_cast<uint16_t>(v >> 16));
            put16(static_cast<uint16_t>(v));
        } else {
            put16(static_cast<uint16_t>(v));
            put16(static_cast<uint16_t>(v >> 16));
        }
    }

    ByteOrder order_;
    Bytes bytes_;
};

inline Bytes concat(std::initializer_list<Bytes> parts) {
    Bytes all;
    for (const Bytes& part : parts)
        all.insert(all.end(), part.begin(), part.end());
    return all;
}

inline Bytes big16(uint16_t v) {
    return {static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
}
inline Bytes big32(uint32_t v) {
    return concat({big16(static_cast<uint16_t>(v >> 16)), big16(static_cast<uint16_t>(v))});
}
inline Bytes little32(uint32_t v) {
    return {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
            static_cast<uint8_t>(v >> 24)};
}

inline Bytes pattern(size_t length, uint8_t seed) {
    Bytes bytes(length);
    for (size_t i = 0; i < length; ++i)
        bytes[i] = static_cast<uint8_t>(seed + i * 13);
    return bytes;
}

// IPv4 + UDP from 10.1.2.3:40000 to 10.4.5.6:`dst_port` with `payload_bytes` of pattern.
inline Bytes ipv4_udp(uint16_t dst_port, size_t payload_bytes) {
    const auto total = static_cast<uint16_t>(20 + 8 + payload_bytes);
    return concat({{0x45, 0x00},
                   big16(total),
                   {0x12, 0x34, 0x40, 0x00, 64, 17, 0, 0},
                   {10, 1, 2, 3},
                   {10, 4, 5, 6},
                   big16(40000),
                   big16(dst_port),
                   big16(static_cast<uint16_t>(8 + payload_bytes)),
                   {0, 0},
                   pattern(payload_bytes, 7)});
}

// A pcapng file: one little-endian section, interfaces and enhanced packet blocks in the order
// they are added (timestamps in microseconds, the default if_tsresol).
class PcapngFileBytes {
  public:
    PcapngFileBytes() {
        block(0x0A0D0D0A, words({0x1A2B3C4D, 0x00000001, 0xFFFFFFFF, 0xFFFFFFFF}));
    }

    PcapngFileBytes& interface(uint16_t link_type, uint32_t snap_length) {
        block(1, words({link_type, snap_length}));
        return *this;
    }

    // `wire_length` 0 means the captured size.
    PcapngFileBytes& packet(uint32_t interface, uint64_t timestamp_us, const Bytes& captured,
                            uint32_t wire_length = 0) {
        const auto caplen = static_cast<uint32_t>(captured.size());
        Bytes body = words({interface, static_cast<uint32_t>(timestamp_us >> 32),
                            static_cast<uint32_t>(timestamp_us), caplen,
                            wire_length == 0 ? caplen : wire_length});
        body.insert(body.end(), captured.begin(), captured.end());
        body.resize((body.size() + 3) & ~size_t{3}, 0);  // blocks are padded to 32 bits
        block(6, body);
        return *this;
    }

    void write(const std::string& path) const {
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes_.data()),
                  static_cast<std::streamsize>(bytes_.size()));
    }

  private:
    static Bytes words(std::initializer_list<uint32_t> values) {
        Bytes out;
        for (uint32_t v : values)
            for (int k = 0; k < 4; ++k)
                out.push_back(static_cast<uint8_t>(v >> (8 * k)));
        return out;
    }
    void block(uint32_t type, const Bytes& body) {
        const auto total = static_cast<uint32_t>(12 + body.size());
        const Bytes head = words({type, total});
        bytes_.insert(bytes_.end(), head.begin(), head.end());
        bytes_.insert(bytes_.end(), body.begin(), body.end());
        const Bytes tail = words({total});
        bytes_.insert(bytes_.end(), tail.begin(), tail.end());
    }

    Bytes bytes_;
};

}  // namespace twinlane::replay::testing::capture
