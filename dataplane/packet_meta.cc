#include "dataplane/packet_meta.h"

#include <rte_errno.h>
#include <rte_mbuf_dyn.h>

namespace twinlane::dataplane {

int register_packet_meta(std::string& error) {
    static const rte_mbuf_dynfield descriptor = {"twinlane_packet_meta", sizeof(PacketMeta),
                                                 alignof(PacketMeta), 0};
    const int offset = rte_mbuf_dynfield_register(&descriptor);
    if (offset < 0) {
        error = std::string("cannot register the mbuf metadata field: ") + rte_strerror(rte_errno);
    }
    return offset;
}

}  // namespace twinlane::dataplane
