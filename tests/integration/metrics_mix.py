#!/usr/bin/env python3
"""A pcap for the Prometheus test (stdlib only), looped by net_pcap's infinite_rx:

  metrics_mix.py OUT.pcap [--rounds N]

Each round: 8 inference flows (TCP to 50051, 256 B), 16 RoCEv2 training flows in 4 job
subnets (198.18.16-19.0/24, ECT(0), DSCP 26, 1024 B, two frames each), 4 non-ECT TCP training
flows (job 0 subnet, 1500 B), 4 other flows (UDP 9999, 512 B, two frames each) and 3 malformed
frames (IPv4 header cut short, IHL below 5, total length beyond the frame). Far above a 200M
egress, this drives tail and fq drops, RED marks (ECT) and early drops (non-ECT), CoDel and the
malformed-drop counter together. Frames are at most 1514 bytes: infinite_rx takes no
multi-segment mbufs.
"""
import argparse
import struct
import sys

from frames import ethernet, ipv4

ECT0 = 0x02
DSCP_AF31 = 26


def tcp(sport, dport, size):
    body = bytes(size - 14 - 20 - 20)
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x18, 65535, 0, 0) + body


def udp(sport, dport, body):
    return struct.pack("!HHHH", sport, dport, 8 + len(body), 0) + body


def roce(qp, size):
    # BTH (RC SEND only, destination QP) after UDP 4791, then payload.
    bth = struct.pack("!BBHII", 0x04, 0, 0xFFFF, qp, 0)
    return bth + bytes(size - 14 - 20 - 8 - len(bth))


def round_frames():
    out = []
    for i in range(8):
        out.append(ethernet(ipv4(6, tcp(43000 + i, 50051, 256), [198, 18, 3, 1 + i],
                                 [198, 18, 4, 1])))
    for job in range(4):
        for flow in range(4):
            frame = ethernet(ipv4(17, udp(49152 + flow, 4791, roce(0x100 + flow, 1024)),
                                  [198, 18, 16 + job, 1 + flow], [198, 18, 32, 1],
                                  tos=DSCP_AF31 << 2 | ECT0))
            out += [frame, frame]
    for flow in range(4):
        out.append(ethernet(ipv4(6, tcp(40000 + flow, 5000, 1500), [198, 18, 16, 100 + flow],
                                 [198, 18, 32, 2])))
    for flow in range(4):
        frame = ethernet(ipv4(17, udp(30000 + flow, 9999, bytes(512 - 42)), [198, 18, 5, 1 + flow],
                              [198, 18, 6, 1]))
        out += [frame, frame]
    eth = bytes([0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1]) + b"\x08\x00"
    out.append(eth + b"\x45\x00")                                          # IPv4 header cut short
    out.append(eth + b"\x43" + bytes(59))                                  # IHL 3
    out.append(eth + struct.pack("!BBH", 0x45, 0, 9000) + bytes(56))      # total length > frame
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    frames = round_frames() * args.rounds
    with open(args.out, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, frame in enumerate(frames):
            f.write(struct.pack("<IIII", 1_000_000 + i // 1_000_000, i % 1_000_000, len(frame),
                                len(frame)))
            f.write(frame)
    print(f"wrote {len(frames)} frames to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
