"""IPv4/Ethernet frame builders shared by the integration scripts (stdlib only)."""
import struct


def ipv4(proto, payload, src, dst, tos=0, flags_fragment=0x4000):
    """tos: the whole traffic class byte, DSCP << 2 | ECN (0x02 = ECT(0)); flags_fragment: the
    flags and fragment offset field (default: don't fragment)."""
    header = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(payload), 0, flags_fragment, 64,
                         proto, 0, bytes(src), bytes(dst))
    s = sum(struct.unpack("!10H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return header[:10] + struct.pack("!H", ~s & 0xFFFF) + header[12:] + payload


def ethernet(l3):
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + l3
