#!/usr/bin/env python3
"""Small pcap helper for the integration tests (stdlib only).

  pcaptool.py gen OUT.pcap [--count N] [--seed S] [--jumbo]
      Writes N deterministic Ethernet/IPv4 frames (UDP and TCP, 60..1514 bytes, or up to
      9014 with --jumbo) between addresses in 198.18.0.0/15, microsecond timestamps.
  pcaptool.py compare A.pcap B.pcap
      Exits 0 when both hold the same frames in the same order, byte for byte (timestamps
      are ignored); otherwise prints the first difference and exits 1.
  pcaptool.py count A.pcap
      Prints the number of frames.
  pcaptool.py to-us IN.pcap OUT.pcap
      Rewrites a (nanosecond or microsecond) pcap with microsecond timestamps.
  pcaptool.py vxlan IN.pcap OUT.pcap
      Wraps every frame in VXLAN, as an overlay's VTEPs send it: outer Ethernet, IPv4 between
      198.18.250.1 and 198.18.251.1 (DSCP 0, Linux's vxlan default; the inner ECN copied out,
      as Linux tunnels do), UDP to 4789 from a port hashed from the inner frame's headers,
      VNI 100. Microsecond timestamps.
  pcaptool.py scatter IN.pcap OUT.pcap [--seed S]
      Moves each IPv4 /24 in 198.18.16.0/20 (where `twinlane gen` puts its training jobs, one
      /24 each) to a random 10.a.b.0/24, source and destination alike, as jobs sit in a real
      cluster's address plan; the IPv4 header checksum is redone. Microsecond timestamps.
  pcaptool.py malformed OUT.pcap [--count N] [--seed S]
      Writes frames that are broken in many ways (truncated headers, bad IHL, IPv4 total
      length beyond the frame, IPv6 extension loops, runt frames, VLAN tags without payload)
      between valid ones.
"""
import argparse
import random
import struct
import sys
import zlib

PCAP_MAGIC_US = 0xA1B2C3D4
PCAP_MAGIC_NS = 0xA1B23C4D


def read_records(path):
    """Returns [(timestamp_ns, wire_len, bytes)]."""
    with open(path, "rb") as f:
        header = f.read(24)
        magic = struct.unpack("<I", header[:4])[0]
        endian = "<" if magic in (PCAP_MAGIC_US, PCAP_MAGIC_NS) else ">"
        magic = struct.unpack(endian + "I", header[:4])[0]
        scale = 1 if magic == PCAP_MAGIC_NS else 1000
        records = []
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return records
            sec, frac, caplen, wire = struct.unpack(endian + "IIII", rec)
            records.append((sec * 1_000_000_000 + frac * scale, wire, f.read(caplen)))


def write_records(path, records):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", PCAP_MAGIC_US, 2, 4, 0, 0, 65535, 1))
        for t_ns, wire, data in records:
            t_us = t_ns // 1000
            f.write(struct.pack("<IIII", t_us // 1_000_000, t_us % 1_000_000, len(data), wire))
            f.write(data)


def vxlan(args):
    from frames import ethernet, ipv4  # beside this file; only this command needs them
    out = []
    for t_ns, wire, data in read_records(args.a):
        source_port = 49152 + (zlib.crc32(data[:54]) & 0x3FFF)
        vxlan_header = struct.pack("!BBHI", 0x08, 0, 0, 100 << 8)
        udp = struct.pack("!HHHH", source_port, 4789, 8 + len(vxlan_header) + len(data), 0)
        # The inner IPv4/IPv6 header's ECN field, copied outward as Linux tunnels do (RFC 6040;
        # CE leaves as ECT(0)); DSCP stays 0.
        ecn = 0
        if data[12:14] == b"\x08\x00" and len(data) > 15:
            ecn = data[15] & 3
        elif data[12:14] == b"\x86\xdd" and len(data) > 15:
            ecn = (data[15] >> 4) & 3
        ecn = 2 if ecn == 3 else ecn
        frame = ethernet(ipv4(17, udp + vxlan_header + data, [198, 18, 250, 1],
                              [198, 18, 251, 1], tos=ecn))
        out.append((t_ns, wire + len(frame) - len(data), frame))
    write_records(args.out, out)


def scatter(args):
    rng = random.Random(args.seed)
    moved = {}
    out = []
    for t_ns, wire, data in read_records(args.a):
        frame = bytearray(data)
        l3 = 14
        while frame[l3 - 2:l3] in (b"\x81\x00", b"\x88\xa8") and len(frame) >= l3 + 4:
            l3 += 4
        if frame[l3 - 2:l3] == b"\x08\x00" and len(frame) >= l3 + 20:
            changed = False
            for at in (l3 + 12, l3 + 16):
                if frame[at] == 198 and frame[at + 1] == 18 and 16 <= frame[at + 2] < 32:
                    subnet = moved.setdefault(frame[at + 2], bytes([10, rng.randrange(256),
                                                                    rng.randrange(256)]))
                    frame[at:at + 3] = subnet
                    changed = True
            if changed:
                header = (frame[l3] & 15) * 4
                frame[l3 + 10:l3 + 12] = b"\0\0"
                frame[l3 + 10:l3 + 12] = struct.pack("!H", checksum(bytes(frame[l3:l3 + header])))
        out.append((t_ns, wire, bytes(frame)))
    write_records(args.out, out)


def malformed(args):
    rng = random.Random(args.seed)
    eth = bytes([0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1])
    valid = make_frame(rng, 0, 1514)
    broken = [
        eth[:10],                                              # runt: not even an Ethernet header
        eth + b"\x08\x00" + b"\x45\x00",                        # IPv4 header cut short
        eth + b"\x08\x00" + b"\x4f" + bytes(19),                 # IHL 15 (60 bytes) beyond the frame
        eth + b"\x08\x00" + b"\x43" + bytes(40),                 # IHL 3: below the minimum
        eth + b"\x08\x00" + struct.pack("!BBH", 0x45, 0, 9000) + bytes(36),  # total length > frame
        eth + b"\x81\x00" + b"\x00\x05",                        # VLAN tag, nothing after
        eth + b"\x81\x00\x00\x05" * 9 + b"\x08\x00",             # too many stacked VLANs
        eth + b"\x86\xdd" + b"\x60" + bytes(20),                 # IPv6 header cut short
        eth + b"\x86\xdd" + b"\x60\x00\x00\x00\x00\x10\x00\x40" + bytes(32) + b"\x3b\x05",  # ext hdr beyond
        eth + b"\x08\x00" + struct.pack("!BBHHHBBH", 0x45, 0, 28, 0, 0, 64, 6, 0) + bytes(8),  # TCP cut
    ]
    records = []
    t = 1_000_000_000
    for i in range(args.count):
        frame = broken[i % len(broken)] if i % 2 else valid
        records.append((t, len(frame), frame))
        t += 1000
    write_records(args.out, records)


def read_frames(path):
    with open(path, "rb") as f:
        header = f.read(24)
        if len(header) < 24:
            raise SystemExit(f"{path}: not a pcap file (short header)")
        magic = struct.unpack("<I", header[:4])[0]
        if magic in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
            endian = "<"
        elif struct.unpack(">I", header[:4])[0] in (PCAP_MAGIC_US, PCAP_MAGIC_NS):
            endian = ">"
        else:
            raise SystemExit(f"{path}: not a pcap file (magic {magic:#x})")
        frames = []
        while True:
            rec = f.read(16)
            if not rec:
                return frames
            if len(rec) < 16:
                raise SystemExit(f"{path}: truncated record header")
            _, _, caplen, _ = struct.unpack(endian + "IIII", rec)
            data = f.read(caplen)
            if len(data) < caplen:
                raise SystemExit(f"{path}: truncated record")
            frames.append(data)


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def make_frame(rng, index, max_len):
    length = rng.choice([60, 64, 128, 512, 1024, 1514, rng.randint(60, max_len)])
    length = min(length, max_len)
    proto = rng.choice([6, 17])
    src = bytes([198, 18, rng.randint(0, 255), rng.randint(1, 254)])
    dst = bytes([198, 19, rng.randint(0, 255), rng.randint(1, 254)])
    l4_len = 20 if proto == 6 else 8
    payload_len = max(0, length - 14 - 20 - l4_len)
    ip_total = 20 + l4_len + payload_len
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_total, index & 0xFFFF, 0, 64, proto, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
    sport, dport = rng.randint(1024, 65535), rng.choice([80, 443, 4791, 8001, 50051])
    if proto == 6:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, index, 0, 5 << 4, 0x18, 65535, 0, 0)
    else:
        l4 = struct.pack("!HHHH", sport, dport, 8 + payload_len, 0)
    payload = bytes((index + i) & 0xFF for i in range(payload_len))
    eth = bytes([0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1]) + struct.pack("!H", 0x0800)
    frame = eth + ip + l4 + payload
    return frame + b"\0" * (60 - len(frame)) if len(frame) < 60 else frame


def gen(args):
    rng = random.Random(args.seed)
    max_len = 9014 if args.jumbo else 1514
    with open(args.out, "wb") as f:
        f.write(struct.pack("<IHHiIII", PCAP_MAGIC_US, 2, 4, 0, 0, 65535, 1))
        for i in range(args.count):
            frame = make_frame(rng, i, max_len)
            t_us = 1_000_000 + i * 10
            f.write(struct.pack("<IIII", t_us // 1_000_000, t_us % 1_000_000, len(frame), len(frame)))
            f.write(frame)


def compare(args):
    a, b = read_frames(args.a), read_frames(args.b)
    for i, (fa, fb) in enumerate(zip(a, b)):
        if fa != fb:
            print(f"frame {i} differs ({len(fa)} vs {len(fb)} bytes)")
            return 1
    if len(a) != len(b):
        print(f"frame counts differ: {len(a)} vs {len(b)}")
        return 1
    print(f"identical: {len(a)} frames")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("out")
    g.add_argument("--count", type=int, default=1000)
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--jumbo", action="store_true")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    n = sub.add_parser("count")
    n.add_argument("a")
    u = sub.add_parser("to-us")
    u.add_argument("a")
    u.add_argument("out")
    v = sub.add_parser("vxlan")
    v.add_argument("a")
    v.add_argument("out")
    sc = sub.add_parser("scatter")
    sc.add_argument("a")
    sc.add_argument("out")
    sc.add_argument("--seed", type=int, default=1)
    m = sub.add_parser("malformed")
    m.add_argument("out")
    m.add_argument("--count", type=int, default=200)
    m.add_argument("--seed", type=int, default=3)
    args = p.parse_args()
    if args.cmd == "to-us":
        write_records(args.out, read_records(args.a))
        return 0
    if args.cmd == "vxlan":
        vxlan(args)
        return 0
    if args.cmd == "scatter":
        scatter(args)
        return 0
    if args.cmd == "malformed":
        malformed(args)
        return 0
    if args.cmd == "gen":
        gen(args)
        return 0
    if args.cmd == "compare":
        return compare(args)
    print(len(read_frames(args.a)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
