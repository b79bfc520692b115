#!/usr/bin/env python3
"""Paced, sequence-numbered multi-flow traffic for the live-daemon tests (stdlib only).

  flow_stream.py write OUT [--tick-ms T] [--seconds S] [--stop-file F] [--summary J]
      Writes a pcap stream to OUT (normally a FIFO that net_pcap reads as rx_pcap) in ticks of
      T ms (default 10), paced in real time, until S seconds passed or F exists. Every tick:
      2 inference flows (TCP to 50051) x 5 frames of 200 B, 4 training flows (RoCEv2, UDP
      4791, job subnets 198.18.16-19.0/24) x 20 frames of 1000 B, 2 other flows (UDP 9999) x 5
      frames of 300 B; and every 10th tick one frame of the sparse `probe` flow (UDP to 7777),
      which the tests move between classes with rules. ~10k frames/s, ~68 Mbit/s, in bursts
      (10 ms ticks; 20 ms: half that).
      Each frame carries (flow id, sequence number) right after its L4 header.
      At the end, writes {flow id: frames sent} and the total to J.
  flow_stream.py check OUT.pcap SUMMARY.json
      Every flow's frames arrived exactly once and in sequence order; prints a summary line.
"""
import argparse
import json
import os
import struct
import sys
import time

from frames import ethernet, ipv4

MAGIC = 0x7A5EC0DE


class Flow:
    """One flow: a frame template whose (flow id, sequence) field is patched per frame."""

    def __init__(self, flow_id, name, proto, src, dst, sport, dport, size, per_tick, every=1):
        self.flow_id, self.name, self.per_tick, self.every = flow_id, name, per_tick, every
        self.sent = 0
        l4_len = 20 if proto == 6 else 8
        body = bytearray(size - 14 - 20 - l4_len)
        if proto == 6:
            l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x18, 65535, 0, 0)
        elif dport == 4791:  # RoCEv2: BTH (opcode 0x04 RC SEND only) right after UDP
            body[0:12] = struct.pack("!BBHII", 0x04, 0, 0xFFFF, 0x1000 + flow_id, 0)
            l4 = struct.pack("!HHHH", sport, dport, 8 + len(body), 0)
        else:
            l4 = struct.pack("!HHHH", sport, dport, 8 + len(body), 0)
        self.frame = bytearray(ethernet(ipv4(proto, l4 + bytes(body), src, dst)))
        # The tag lives after any RoCE BTH (12 B) so the classifier sees a valid header.
        self.tag_at = 14 + 20 + l4_len + (12 if dport == 4791 else 0)

    def next_frame(self):
        struct.pack_into("!III", self.frame, self.tag_at, MAGIC, self.flow_id, self.sent)
        self.sent += 1
        return bytes(self.frame)


def flows():
    out = []
    fid = 0
    for i in range(2):
        out.append(Flow(fid, f"inference{i}", 6, [198, 18, 3, 1 + i], [198, 18, 4, 1],
                        43000 + i, 50051, 200, 5))
        fid += 1
    for job in range(4):
        out.append(Flow(fid, f"training{job}", 17, [198, 18, 16 + job, 1], [198, 18, 32, 1],
                        49152 + job, 4791, 1000, 20))
        fid += 1
    for i in range(2):
        out.append(Flow(fid, f"other{i}", 17, [198, 18, 5, 1 + i], [198, 18, 6, 1],
                        30000 + i, 9999, 300, 5))
        fid += 1
    out.append(Flow(fid, "probe", 17, [198, 18, 7, 1], [198, 18, 8, 1], 31000, 7777, 128, 1,
                    every=10))
    return out


def write(args):
    stream = flows()
    deadline = time.monotonic() + args.seconds
    with open(args.out, "wb", buffering=0) as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        start = time.monotonic()
        tick = 0
        while time.monotonic() < deadline and not (args.stop_file and
                                                    os.path.exists(args.stop_file)):
            now = time.time()
            sec, usec = int(now), int((now % 1) * 1e6)
            chunks = []
            for _ in range(max(fl.per_tick for fl in stream)):
                for fl in stream:
                    if tick % fl.every == 0 and fl.sent < (tick // fl.every + 1) * fl.per_tick:
                        frame = fl.next_frame()
                        chunks.append(struct.pack("<IIII", sec, usec, len(frame), len(frame)))
                        chunks.append(frame)
            f.write(b"".join(chunks))
            tick += 1
            delay = start + tick * args.tick_ms / 1000 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    summary = {"flows": {str(fl.flow_id): fl.sent for fl in stream},
               "names": {str(fl.flow_id): fl.name for fl in stream},
               "total": sum(fl.sent for fl in stream), "ticks": tick}
    with open(args.summary, "w") as f:
        json.dump(summary, f)


def check(args):
    summary = json.load(open(args.summary))
    expected = {int(k): v for k, v in summary["flows"].items()}
    names = summary["names"]
    next_seq = {k: 0 for k in expected}
    problems = []
    frames = 0
    with open(args.pcap, "rb") as f:
        f.read(24)
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                break
            caplen = struct.unpack("<IIII", rec)[2]
            frame = f.read(caplen)
            frames += 1
            proto = frame[23]
            at = 14 + 20 + (20 if proto == 6 else 8)
            if proto == 17 and struct.unpack("!H", frame[36:38])[0] == 4791:
                at += 12
            magic, fid, seq = struct.unpack("!III", frame[at:at + 12])
            if magic != MAGIC or fid not in expected:
                problems.append(f"frame {frames}: not ours")
            elif seq != next_seq[fid]:
                problems.append(f"flow {names[str(fid)]}: got sequence {seq}, expected "
                                f"{next_seq[fid]} (frame {frames} of the output)")
                next_seq[fid] = seq + 1
            else:
                next_seq[fid] += 1
            if len(problems) > 20:
                break
    for fid, count in expected.items():
        if next_seq[fid] != count:
            problems.append(f"flow {names[str(fid)]}: {next_seq[fid]} of {count} frames out")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    print(f"{frames} frames in {len(expected)} flows, each complete and in order")
    return 0


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("out")
    w.add_argument("--seconds", type=float, default=60)
    w.add_argument("--tick-ms", type=float, default=10)
    w.add_argument("--stop-file")
    w.add_argument("--summary", required=True)
    c = sub.add_parser("check")
    c.add_argument("pcap")
    c.add_argument("summary")
    args = parser.parse_args()
    if args.cmd == "write":
        write(args)
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
