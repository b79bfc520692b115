#!/usr/bin/env python3
"""The latency-SLO goals of issue 20, measured in replay (virtual time).

  slo_goals.py TWINLANE POLICY WORKDIR [--surge-clients N] [--seed S] [--check] [--json OUT]

Generates a 100 ms trace (training offered at 110% of a 10G link, inference 10% surging to 25x
from 10 ms to 30 ms, other 2%; seed 1 unless --seed) and the same trace without the surge,
replays them under POLICY with its SLO controller and with --slo-measure-only (the fixed cap),
and measures:

  attainment      windows that met the inference SLO / windows judged, with and without the
                  controller, over the run and over the surge's windows
  downgraded      bytes the controller moved to the lower class, against the surge's excess
                  over the max cap (per window: offered inference bytes above max cap x window)
  training share  while training was backlogged (it wanted more): its wire bytes over what
                  inference left of the link then (link x time minus inference's wire bytes);
                  and, per 1 ms bin of frame bytes, over the surge whether backlogged or not
  settling        windows from the surge's start (and end) to the controller's last action in
                  that phase: any action (strict), and actions moving at least 5% of the class's
                  bytes of their window (cap changes always count). A return decided while the
                  flow still has packets queued in the lower class is one action; the flow
                  leaves the lower class when they have left, which is reported apart: windows
                  from the surge's end to the last window that closed with a flow still down
  reordering      per flow (5-tuple), packets left in the order they arrived (TCP sequence,
                  RoCEv2 PSN, else IPv4 ID)
  no surge        the departures under POLICY and under POLICY without its slo keys are the
                  same bytes

--check exits 1 when a goal this repository claims is missed (see README.md, "Latency SLOs").
Stdlib only, plus the twinlane binary.
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys

SURGE_START_MS = 10
SURGE_END_MS = 30
INFERENCE_PORTS = {8000, 8001, 8080, 50051}  # what `twinlane gen` serves inference on


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def read_pcap(path):
    """Yields (timestamp_ns, frame bytes) of a classic pcap (us or ns)."""
    with open(path, "rb") as f:
        header = f.read(24)
        magic = struct.unpack("<I", header[:4])[0]
        endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
        magic = struct.unpack(endian + "I", header[:4])[0]
        scale = 1 if magic == 0xA1B23C4D else 1000
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, caplen, _ = struct.unpack(endian + "IIII", rec)
            yield sec * 1_000_000_000 + frac * scale, f.read(caplen)


def parse(frame):
    """(flow key, in-flow sequence, is inference, wire length) of an Ethernet frame, or None."""
    if len(frame) < 14:
        return None
    ethertype = struct.unpack("!H", frame[12:14])[0]
    off = 14
    if ethertype == 0x8100:
        ethertype = struct.unpack("!H", frame[16:18])[0]
        off = 18
    if ethertype == 0x0800:
        ihl = (frame[off] & 0x0F) * 4
        proto = frame[off + 9]
        src, dst = frame[off + 12:off + 16], frame[off + 16:off + 20]
        ip_id = struct.unpack("!H", frame[off + 4:off + 6])[0]
        l4 = off + ihl
    elif ethertype == 0x86DD:
        proto = frame[off + 6]
        src, dst = frame[off + 8:off + 24], frame[off + 24:off + 40]
        ip_id = None
        l4 = off + 40
    else:
        return None
    if proto not in (6, 17) or len(frame) < l4 + 8:
        return None
    sport, dport = struct.unpack("!HH", frame[l4:l4 + 4])
    key = (src, dst, proto, sport, dport)
    if proto == 6:
        seq = struct.unpack("!I", frame[l4 + 4:l4 + 8])[0]
    elif dport == 4791 and len(frame) >= l4 + 20:
        seq = struct.unpack("!I", frame[l4 + 16:l4 + 20])[0] & 0xFFFFFF  # BTH PSN
    else:
        seq = ip_id
    inference = proto == 6 and (sport in INFERENCE_PORTS or dport in INFERENCE_PORTS)
    return key, seq, inference


def flows_in_order(input_pcap, output_pcap):
    """(flows checked, packets out of order): each flow's departures keep its arrival order."""
    position = {}
    for _, frame in read_pcap(input_pcap):
        p = parse(frame)
        if p is None or p[1] is None:
            continue
        key, seq, _ = p
        position.setdefault(key, {}).setdefault(seq, len(position[key]))
    last = {}
    bad = 0
    for _, frame in read_pcap(output_pcap):
        p = parse(frame)
        if p is None or p[1] is None or p[0] not in position:
            continue
        key, seq, _ = p
        at = position[key].get(seq)
        if at is None:
            continue
        if at < last.get(key, -1):
            bad += 1
        last[key] = at
    return len(last), bad


def offered_inference_by_window(input_pcap, window_ns):
    """Frame bytes of inference arrivals per window index."""
    per = {}
    for t, frame in read_pcap(input_pcap):
        p = parse(frame)
        if p is not None and p[2]:
            w = t // window_ns
            per[w] = per.get(w, 0) + len(frame)
    return per


def strip_slo(policy_text):
    """The policy without its `slo:` entries (flow or block form)."""
    out, skip_indent = [], None
    for line in policy_text.splitlines():
        indent = len(line) - len(line.lstrip())
        if skip_indent is not None:
            if line.strip() and indent > skip_indent:
                continue
            skip_indent = None
        if re.match(r"^\s*slo:", line):
            if not line.rstrip().endswith("}"):
                skip_indent = indent
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def window_stats(series, lo_ns, hi_ns, trace_ns):
    met = missed = 0
    for t, m in zip(series["t_s"], series["met"]):
        if lo_ns <= trace_ns(t) < hi_ns and m is not None:
            met += 1 if m else 0
            missed += 0 if m else 1
    return met, missed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("twinlane")
    ap.add_argument("policy")
    ap.add_argument("workdir")
    ap.add_argument("--surge-clients", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1, help="the generator's seed (default 1)")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    tl, wd = args.twinlane, args.workdir
    os.makedirs(wd, exist_ok=True)
    gen = [tl, "gen", "--link-rate", "10G", "--duration", "100ms", "--training-load", "1.1",
           "--inference-load", "0.1", "--other-load", "0.02", "--seed", str(args.seed)]
    base, surge = os.path.join(wd, "base.pcap"), os.path.join(wd, "surge.pcap")
    run(gen + ["-o", base])
    run(gen + ["-o", surge, "--surge", "25", "--surge-start", f"{SURGE_START_MS}ms",
               "--surge-end", f"{SURGE_END_MS}ms", "--surge-clients", str(args.surge_clients)])
    replay = [tl, "--log-level", "warn", "replay", "-c", args.policy, "--link-rate", "10G"]
    ctl_json, fixed_json = os.path.join(wd, "controller.json"), os.path.join(wd, "fixed.json")
    ctl_pcap = os.path.join(wd, "controller.pcap")
    run(replay + ["-i", surge, "-o", ctl_pcap, "--report", ctl_json])
    run(replay + ["-i", surge, "--report", fixed_json, "--slo-measure-only"])
    # No surge: the same departures as the policy without its slo keys.
    noslo = os.path.join(wd, "noslo.yaml")
    with open(args.policy) as f, open(noslo, "w") as g:
        g.write(strip_slo(f.read()))
    a, b = os.path.join(wd, "base.slo.pcap"), os.path.join(wd, "base.noslo.pcap")
    run(replay + ["-i", base, "-o", a])
    run([tl, "--log-level", "warn", "replay", "-c", noslo, "--link-rate", "10G", "-i", base,
         "-o", b])
    with open(a, "rb") as x, open(b, "rb") as y:
        identical = x.read() == y.read()

    ctl = json.load(open(ctl_json))
    fixed = json.load(open(fixed_json))
    inf = ctl["slo"]["classes"]["inference"]
    inf_fixed = fixed["slo"]["classes"]["inference"]
    window_s = inf["objective"]["window_s"]
    window_ns = int(round(window_s * 1e9))
    cap_max = inf["objective"]["adapt_cap"]["max_bps"]
    lo_ns, hi_ns = SURGE_START_MS * 1_000_000, SURGE_END_MS * 1_000_000
    # The report counts time from the first arrival; the surge's bounds are the trace's time
    # (the generator's, from 0), and the governor's windows are aligned in the trace's time.
    # Every report time is moved onto the trace's clock, in whole ns, before it is set against
    # the surge.
    first_ns = next(read_pcap(surge))[0]

    def trace_ns(t_s):
        return round(t_s * 1e9) + first_ns

    met, missed = inf["windows"]["met"], inf["windows"]["missed"]
    s_met, s_missed = window_stats(inf["series"], lo_ns, hi_ns, trace_ns)
    f_met, f_missed = inf_fixed["windows"]["met"], inf_fixed["windows"]["missed"]
    fs_met, fs_missed = window_stats(inf_fixed["series"], lo_ns, hi_ns, trace_ns)

    offered = offered_inference_by_window(surge, window_ns)
    cap_bytes = cap_max * window_s / 8
    excess = sum(max(0.0, b - cap_bytes) for w, b in offered.items()
                 if lo_ns <= w * window_ns < hi_ns)
    downgraded = inf["downgrade"]["bytes"] - inf["downgrade"]["returned_bytes"]

    # Training's share of what inference left, per 1 ms bin of the report's series.
    link = ctl["link_rate_bps"]
    series = {name: c["throughput_series"] for name, c in ctl["classes"].items()}
    bin_s = series["training"]["interval_s"]

    def share(lo_ns, hi_ns):
        used = left = 0.0
        tr, nf = series["training"]["bps"], series["inference"]["bps"]
        for i in range(max(len(tr), len(nf))):
            if not (lo_ns <= trace_ns(i * bin_s) < hi_ns):
                continue
            t_bps = tr[i] if i < len(tr) else 0.0
            i_bps = nf[i] if i < len(nf) else 0.0
            used += t_bps
            left += link - i_bps
        return used / left if left > 0 else 1.0

    share_surge = share(lo_ns, hi_ns)
    bl = ctl["classes"]["training"]["backlogged"]
    by_class = bl["wire_bytes_by_class"]
    left_while_backlogged = bl["seconds"] * link / 8 - by_class["inference"]
    share_all = by_class["training"] / left_while_backlogged if left_while_backlogged > 0 else 1.0

    # Settling: the controller's last action in each phase, in windows from its start.
    windows_bytes = {trace_ns(t) // window_ns: bi + bd for t, bi, bd in
                     zip(inf["series"]["t_s"], inf["series"]["bytes_in"],
                         inf["series"]["downgraded_bytes"])}
    actions = [e for e in ctl["slo"]["events"] if e["kind"] in ("cap", "downgrade", "restore")]

    def settle(lo_ns, hi_ns):
        strict = tolerant = 0.0
        for e in actions:
            t = trace_ns(e["t_s"])
            if not (lo_ns <= t < hi_ns):
                continue
            after = (t - lo_ns) / window_ns
            strict = max(strict, after)
            # Flows moved are weighed by their bytes in the window the action closed (at its
            # end) or fell in.
            window_bytes = windows_bytes.get((t - 1) // window_ns, 0) or 1
            if e["kind"] == "cap" or e["bytes"] >= 0.05 * window_bytes:
                tolerant = max(tolerant, after)
        return strict, tolerant

    start_strict, start_tol = settle(lo_ns, hi_ns)
    end_strict, end_tol = settle(hi_ns, 1 << 62)
    # Flows still downgraded (returns decided, packets draining below, or not yet returned).
    down_until = 0.0
    for t, flows in zip(inf["series"]["t_s"], inf["series"]["downgraded_flows"]):
        if trace_ns(t) >= hi_ns and flows:
            down_until = max(down_until, (trace_ns(t) + window_ns - hi_ns) / window_ns)
    checked_flows, out_of_order = flows_in_order(surge, ctl_pcap)

    goals = {
        "surge_clients": args.surge_clients or 32,
        "attainment_controller": met / max(1, met + missed),
        "attainment_controller_surge": s_met / max(1, s_met + s_missed),
        "attainment_fixed": f_met / max(1, f_met + f_missed),
        "surge_windows_missed_fixed": fs_missed,
        "surge_windows_judged_fixed": fs_met + fs_missed,
        "worst_window_us": inf["worst_window"]["percentile_us"] if inf["worst_window"] else 0,
        "worst_window_fixed_us": inf_fixed["worst_window"]["percentile_us"]
        if inf_fixed["worst_window"] else 0,
        "excess_bytes": excess,
        "downgraded_bytes": downgraded,
        "downgraded_over_excess": downgraded / excess if excess else float("inf"),
        "downgraded_flows": inf["downgrade"]["flows"],
        "training_share_surge": share_surge,
        "training_share_run": share_all,
        "settle_after_start_windows": start_strict,
        "settle_after_start_windows_5pct": start_tol,
        "settle_after_end_windows": end_strict,
        "settle_after_end_windows_5pct": end_tol,
        "flows_down_after_end_windows": down_until,
        "cap_changes": inf["cap"]["changes"],
        "flows_checked": checked_flows,
        "packets_out_of_order": out_of_order,
        "no_surge_identical": identical,
    }
    g = goals
    print(f"surge spread over {g['surge_clients']} clients")
    print("| goal | without controller (fixed cap) | with adapt_cap + downgrade |")
    print("| --- | --- | --- |")
    print(f"| windows meeting p99 <= 50 us (run) | {g['attainment_fixed']:.1%} | "
          f"{g['attainment_controller']:.1%} |")
    print(f"| surge windows missed | {g['surge_windows_missed_fixed']} of "
          f"{g['surge_windows_judged_fixed']} | "
          f"{round((1 - g['attainment_controller_surge']) * (s_met + s_missed))} of "
          f"{s_met + s_missed} |")
    print(f"| worst window p99 | {g['worst_window_fixed_us']:.1f} us | "
          f"{g['worst_window_us']:.1f} us |")
    print(f"| bytes downgraded / surge excess over max cap | - | "
          f"{g['downgraded_bytes'] / 1e6:.2f} / {g['excess_bytes'] / 1e6:.2f} MB = "
          f"{g['downgraded_over_excess']:.2f} ({g['downgraded_flows']} flows) |")
    print(f"| training's share of what inference leaves (while backlogged / surge bins) | - | "
          f"{g['training_share_run']:.1%} / {g['training_share_surge']:.1%} |")
    print(f"| settling after surge start (strict / moves >= 5%) | - | "
          f"{g['settle_after_start_windows']:.1f} / {g['settle_after_start_windows_5pct']:.1f} "
          f"windows |")
    print(f"| settling after surge end (strict / moves >= 5%) | - | "
          f"{g['settle_after_end_windows']:.1f} / {g['settle_after_end_windows_5pct']:.1f} "
          f"windows |")
    print(f"| flows still downgraded after the surge's end (returns draining below) | - | "
          f"{g['flows_down_after_end_windows']:.1f} windows |")
    print(f"| packets out of flow order | - | {g['packets_out_of_order']} "
          f"({g['flows_checked']} flows) |")
    print(f"| no surge: departures identical to the policy without slo | - | "
          f"{'yes' if g['no_surge_identical'] else 'NO'} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(goals, f, indent=2)
    if args.check:
        failures = []
        if g["attainment_controller"] < 0.999:
            failures.append("windows met with the controller below 99.9%")
        if g["surge_windows_missed_fixed"] * 2 <= g["surge_windows_judged_fixed"]:
            failures.append("the fixed cap did not miss most surge windows")
        if g["training_share_run"] < 0.90:
            failures.append("training kept less than 90% of what inference left")
        if g["settle_after_start_windows_5pct"] > 10 or g["settle_after_end_windows_5pct"] > 10:
            failures.append("the controller took more than 10 windows to settle")
        if g["settle_after_end_windows"] > 10:
            failures.append("the controller still acted more than 10 windows after the surge")
        if g["packets_out_of_order"] != 0:
            failures.append("flows reordered")
        if not g["no_surge_identical"]:
            failures.append("without a surge the departures differ from the policy without slo")
        # Goal: at most the excess + 5%. Not met with this traffic (README.md explains why);
        # what is checked is that it does not get worse than measured.
        if g["downgraded_over_excess"] > 1.5:
            failures.append("downgraded more than 1.5x the surge's excess")
        for f in failures:
            print("FAIL:", f, file=sys.stderr)
        return 1 if failures else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
