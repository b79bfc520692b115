// IEEE 802.1Qbb priority-based flow control (PFC) frames: a MAC control frame to
// 01:80:C2:00:00:01, EtherType 0x8808, opcode 0x0101, then a class-enable vector (bit p: the
// frame speaks for priority p) and eight pause times in quanta of 512 bit times (0 resumes).
// Padded to the 60-byte minimum frame (the NIC adds the FCS). Pure functions over bytes.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

namespace twinlane::pfc {

inline constexpr uint32_t kPriorities = 8;
inline constexpr uint16_t kMacControlEtherType = 0x8808;
inline constexpr uint16_t kPfcOpcode = 0x0101;
inline constexpr uint16_t kPauseOpcode = 0x0001;  // 802.3x link pause: all priorities
inline constexpr uint32_t kFrameBytes = 60;
inline constexpr uint16_t kMaxQuanta = 0xFFFF;
inline constexpr std::array<uint8_t, 6> kPfcDestination{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};
inline constexpr uint32_t kEtherTypeOffset = 12;
inline constexpr uint32_t kOpcodeOffset = 14;

struct PauseFrame {
    uint8_t class_enable = 0;  // bit p set: quanta[p] applies to priority p
    std::array<uint16_t, kPriorities> quanta{};

    bool speaks_for(uint32_t priority) const { return (class_enable >> priority) & 1; }
};

// Writes the frame (kFrameBytes) to `out`; `source` is the sending port's MAC address.
void encode(const PauseFrame& frame, const std::array<uint8_t, 6>& source, uint8_t* out);

// Whether `bytes` is a MAC control frame (EtherType 0x8808, untagged): consumed, never
// forwarded, whatever its opcode. Inline: the RX path asks it of every packet.
inline bool is_mac_control(const uint8_t* bytes, uint32_t length) {
    return length >= kOpcodeOffset && bytes[kEtherTypeOffset] == (kMacControlEtherType >> 8) &&
           bytes[kEtherTypeOffset + 1] == (kMacControlEtherType & 0xFF);
}

// The pause a MAC control frame asks for: a PFC frame as it is, an 802.3x PAUSE as every
// priority paused for its time; nothing for other opcodes or a truncated frame.
std::optional<PauseFrame> decode(const uint8_t* bytes, uint32_t length);

// How long `quanta` pause a port of `rate_bits_per_sec`, in ns (rounded up).
inline uint64_t pause_ns(uint32_t quanta, uint64_t rate_bits_per_sec) {
    if (rate_bits_per_sec == 0) return 0;
    // quanta x 512 x 1e9 fits in 64 bits (65535 x 512e9 < 2^56).
    const uint64_t bit_ns = uint64_t{quanta} * 512u * 1'000'000'000u;
    return (bit_ns + rate_bits_per_sec - 1) / rate_bits_per_sec;
}

}  // namespace twinlane::pfc
