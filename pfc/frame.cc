#include "pfc/frame.h"

#include <cstring>

namespace twinlane::pfc {
namespace {

uint16_t load16(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}
void store16(uint8_t* p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}

constexpr uint32_t kVectorOffset = 16;
constexpr uint32_t kTimesOffset = 18;
constexpr uint32_t kPfcBytes = kTimesOffset + 2 * kPriorities;  // 34
constexpr uint32_t kPauseBytes = kVectorOffset + 2;             // opcode + one pause time

}  // namespace

void encode(const PauseFrame& frame, const std::array<uint8_t, 6>& source, uint8_t* out) {
    std::memset(out, 0, kFrameBytes);
    std::memcpy(out, kPfcDestination.data(), 6);
    std::memcpy(out + 6, source.data(), 6);
    store16(out + kEtherTypeOffset, kMacControlEtherType);
    store16(out + kOpcodeOffset, kPfcOpcode);
    store16(out + kVectorOffset, frame.class_enable);
    for (uint32_t p = 0; p < kPriorities; ++p) {
        // A priority the frame does not speak for carries time 0 (802.1Qbb: ignored).
        store16(out + kTimesOffset + 2 * p, frame.speaks_for(p) ? frame.quanta[p] : 0);
    }
}

std::optional<PauseFrame> decode(const uint8_t* bytes, uint32_t length) {
    if (!is_mac_control(bytes, length) || length < kOpcodeOffset + 2) return std::nullopt;
    const uint16_t opcode = load16(bytes + kOpcodeOffset);
    PauseFrame frame;
    if (opcode == kPfcOpcode && length >= kPfcBytes) {
        // The vector is 16 bits wide; only the low 8 name priorities.
        frame.class_enable = static_cast<uint8_t>(load16(bytes + kVectorOffset));
        for (uint32_t p = 0; p < kPriorities; ++p)
            frame.quanta[p] = load16(bytes + kTimesOffset + 2 * p);
        return frame;
    }
    if (opcode == kPauseOpcode && length >= kPauseBytes) {
        frame.class_enable = 0xFF;
        frame.quanta.fill(load16(bytes + kVectorOffset));
        return frame;
    }
    return std::nullopt;
}

}  // namespace twinlane::pfc
