#!/usr/bin/env python3
"""Input for the lane-ordering tests (stdlib only).

  lanes_pcap.py gen OUT.pcap [--bulk N] [--bulk-bytes B]
      N bulk UDP frames of B bytes (198.18.1.1 -> 198.18.2.1, port 9000), then one TCP frame
      to port 50051 (gRPC inference), all with the same timestamp: the inference frame arrives
      right behind a burst of bulk.
  lanes_pcap.py position OUT.pcap
      Prints how many frames precede the inference frame (TCP to 50051), or -1 if absent.
"""
import argparse
import struct

from frames import ethernet, ipv4


def bulk_frame(index, size):
    body = bytes((index + i) & 0xFF for i in range(size - 14 - 20 - 8))
    udp = struct.pack("!HHHH", 40000, 9000, 8 + len(body), 0) + body
    return ethernet(ipv4(17, udp, [198, 18, 1, 1], [198, 18, 2, 1]))


def inference_frame():
    tcp = struct.pack("!HHIIBBHHH", 43000, 50051, 1, 0, 5 << 4, 0x18, 65535, 0, 0) + b"predict"
    return ethernet(ipv4(6, tcp, [198, 18, 3, 1], [198, 18, 4, 1]))


def is_inference(frame):
    return (len(frame) >= 38 and frame[12:14] == b"\x08\x00" and frame[23] == 6
            and struct.unpack("!H", frame[36:38])[0] == 50051)


def write(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for frame in frames:
            f.write(struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame)


def read(path):
    frames = []
    with open(path, "rb") as f:
        f.read(24)
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return frames
            caplen = struct.unpack("<IIII", rec)[2]
            frames.append(f.read(caplen))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    gen = sub.add_parser("gen")
    gen.add_argument("out")
    gen.add_argument("--bulk", type=int, default=200)
    gen.add_argument("--bulk-bytes", type=int, default=9000)
    pos = sub.add_parser("position")
    pos.add_argument("pcap")
    args = parser.parse_args()
    if args.cmd == "gen":
        write(args.out, [bulk_frame(i, args.bulk_bytes) for i in range(args.bulk)] +
              [inference_frame()])
    else:
        frames = read(args.pcap)
        print(next((i for i, f in enumerate(frames) if is_inference(f)), -1))


if __name__ == "__main__":
    main()
