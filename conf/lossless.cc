#include "conf/lossless.h"

namespace twinlane::conf {

pfc::Headroom auto_headroom(const Policy& policy, size_t port) {
    const PortPolicy& p = policy.ports[port];
    return pfc::compute_headroom(
        pfc::HeadroomInputs{.rate_bits_per_sec = p.rate_bits_per_sec,
                            .max_frame_bytes = p.max_frame_bytes(),
                            .cable_metres = p.pfc.cable_metres,
                            .peer_response_bytes = p.pfc.peer_response_bytes,
                            .poll_ns = policy.pfc.poll_ns,
                            .tx_budget_bytes = p.tx_budget_bytes});
}

uint64_t headroom_bytes(const Policy& policy, size_t port, const LosslessPolicy& lossless) {
    return lossless.headroom_bytes ? *lossless.headroom_bytes
                                   : auto_headroom(policy, port).total_bytes();
}

LosslessRoom lossless_room(const Policy& policy, size_t egress_port,
                           const LosslessPolicy& lossless) {
    LosslessRoom room;
    for (const ForwardingPolicy& f : policy.forwarding) {
        if (f.to_port != egress_port || policy.ports[f.from_port].pfc.mode == PfcMode::off)
            continue;
        ++room.ingress_ports;
        room.bytes += lossless.xoff_bytes + headroom_bytes(policy, f.from_port, lossless);
    }
    return room;
}

}  // namespace twinlane::conf
