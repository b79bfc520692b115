#!/usr/bin/env python3
"""Writes the seed corpus of tests/replay/fuzz_replay.cc into DIR (stdlib only).

  make_fuzz_seeds.py DIR

One small capture of a mixed burst (inference RPCs from a serving port, RoCEv2, TCP training,
IPv6, an 802.1Q tag, a fragment, ARP, a snapped frame), written in every form PcapReader reads:
classic pcap in ns and us, Linux cooked (SLL, SLL2), raw IP, BSD loopback (NULL) and pcapng.
Each file is written four times, behind each of the harness's selector bytes (policy x ingress
link).
"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from frames import ipv4  # noqa: E402


def ipv6(next_header, payload, src_last, dst_last):
    src = bytes([0x20, 0x01, 0x0d, 0xb8] + [0] * 11 + [src_last])
    dst = bytes([0x20, 0x01, 0x0d, 0xb8] + [0] * 11 + [dst_last])
    return struct.pack("!IHBB", 6 << 28, len(payload), next_header, 64) + src + dst + payload


def udp(sport, dport, payload):
    return struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload


def tcp(sport, dport, seq, payload):
    return struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, 0x18, 65535, 0, 0) + payload


def bth(dest_qp, psn):
    return struct.pack("!BBHII", 0x04, 0x40, 0xFFFF, dest_qp & 0xFFFFFF, psn & 0xFFFFFF)


# (ethertype, L3 bytes) of the burst, and the bytes captured of each (None: all).
def burst():
    a, b = [198, 18, 0, 1], [198, 19, 0, 2]
    frames = []
    for i in range(6):
        frames.append((0x0800, ipv4(17, udp(50051, 40000 + i, bytes(120 + 40 * i)), a, b), None))
    for i in range(6):
        roce = udp(49152 + i, 4791, bth(17 + i % 2, i) + bytes(256) + bytes(4))
        frames.append((0x0800, ipv4(17, roce, [198, 18, 1, 1], [198, 18, 1, 2], tos=26 << 2 | 2),
                       None))
    for i in range(4):
        frames.append((0x0800, ipv4(6, tcp(5201, 40100, 1000 * i, bytes(1400)), a, b), 96))
    frames.append((0x86DD, ipv6(17, udp(8000, 40200, bytes(64)), 1, 2), None))
    frames.append((0x86DD, ipv6(6, tcp(40300, 50051, 7, bytes(32)), 3, 4), None))
    first_fragment = ipv4(17, udp(7000, 7001, bytes(200)), a, b, flags_fragment=0x2000)
    frames.append((0x0800, first_fragment, None))
    frames.append((0x0800, ipv4(17, bytes(64), a, b, flags_fragment=0x0010), None))
    frames.append((0x0806, bytes.fromhex("0001080006040001") + bytes(20), None))
    return frames


def eth(ethertype, l3, vlan=None):
    header = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02"
    if vlan is not None:
        header += struct.pack("!HH", 0x8100, vlan)
    return header + struct.pack("!H", ethertype) + l3


def link_frames(link):
    out = []
    for k, (ethertype, l3, snap) in enumerate(burst()):
        if link == 1:
            frame = eth(ethertype, l3, vlan=(3 << 13 | 100) if k % 5 == 0 else None)
        elif link == 113:  # Linux cooked v1: packet type, ARPHRD, address length, address
            frame = struct.pack("!HHH8sH", 0, 1, 6, bytes(8), ethertype) + l3
        elif link == 276:  # v2: protocol, reserved, ifindex, ARPHRD, type, address length
            frame = struct.pack("!HHIHBB8s", ethertype, 0, 2, 1, 0, 6, bytes(8)) + l3
        elif link == 101:
            if ethertype not in (0x0800, 0x86DD):
                continue
            frame = l3
        elif link == 0:  # NULL: address family in the writer's (little-endian) byte order
            if ethertype not in (0x0800, 0x86DD):
                continue
            frame = struct.pack("<I", 2 if ethertype == 0x0800 else 10) + l3
        out.append((frame, snap))
    return out


def classic(link, nanosecond):
    magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
    data = struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 65535, link)
    t_ns = 1_000_000_000
    for k, (frame, snap) in enumerate(link_frames(link)):
        t_ns += 700 if k % 7 else 20_000
        captured = frame[:snap] if snap else frame
        fraction = t_ns % 1_000_000_000 if nanosecond else t_ns % 1_000_000_000 // 1000
        data += struct.pack("<IIII", t_ns // 1_000_000_000, fraction, len(captured), len(frame))
        data += captured
    return data


def pcapng():
    def block(kind, body):
        body += bytes(-len(body) % 4)
        length = 12 + len(body)
        return struct.pack("<II", kind, length) + body + struct.pack("<I", length)

    data = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    # Interface 0: Ethernet, if_tsresol 9 (ns).
    data += block(1, struct.pack("<HHI", 1, 0, 65535) + struct.pack("<HHB3x", 9, 1, 9) +
                  struct.pack("<HH", 0, 0))
    t_ns = 1_000_000_000
    for k, (frame, snap) in enumerate(link_frames(1)):
        t_ns += 900 if k % 5 else 15_000
        captured = frame[:snap] if snap else frame
        body = struct.pack("<IIIII", 0, t_ns >> 32, t_ns & 0xFFFFFFFF, len(captured), len(frame))
        data += block(6, body + captured)
    return data


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    files = {
        "ethernet_ns": classic(1, True),
        "ethernet_us": classic(1, False),
        "linux_sll": classic(113, True),
        "linux_sll2": classic(276, True),
        "raw_ip": classic(101, False),
        "bsd_null": classic(0, True),
        "pcapng": pcapng(),
    }
    for name, data in files.items():
        for selector in range(4):
            with open(os.path.join(out, "%s_%d" % (name, selector)), "wb") as f:
                f.write(bytes([selector]) + data)


if __name__ == "__main__":
    main()
