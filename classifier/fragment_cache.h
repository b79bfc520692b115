// FragmentCache: remembers the decision taken for a fragmented datagram's first fragment, keyed
// by (source, destination, protocol, IP identification), so its later fragments (which carry
// no ports) follow the same class, job and flow hash. Bounded and preallocated: 4-way
// set-associative; a full set evicts its entry closest to expiry. Entries expire after the
// configured timeout. Single writer (owned by one Classifier); no locking.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "classifier/flow_table.h"
#include "classifier/packet_key.h"

namespace twinlane::classifier {

struct FragmentDecision {
    FlowDecision decision;   // class/job/rule as applied to the first fragment
    uint32_t flow_hash = 0;  // the flow's hash, so all fragments land in the same fq queue
};

class FragmentCache {
  public:
    // capacity 0 disables the cache (remember does nothing, recall finds nothing).
    explicit FragmentCache(uint32_t capacity);

    // Key of a datagram: addresses and protocol of `flow_key`, plus the IP identification.
    static PacketKey datagram_key(const PacketKey& flow_key, uint32_t fragment_id);

    void remember(const PacketKey& datagram, const FragmentDecision& decision, uint64_t now_ns,
                  uint64_t timeout_ns);
    const FragmentDecision* recall(const PacketKey& datagram, uint64_t now_ns) const;

  private:
    static constexpr uint32_t kWays = 4;
    struct Entry {
        PacketKey key;
        uint64_t expires_ns = 0;  // 0: empty
        FragmentDecision value;
    };
    std::vector<Entry> entries_;  // sets of kWays consecutive entries
    uint32_t set_mask_ = 0;
};

}  // namespace twinlane::classifier
