#!/usr/bin/env bash
# Inference latency through the realtime pipeline while training saturates a 10G egress: the
# RX->TX latency percentiles of the inference class from `twinlane run`'s own per-class
# histogram (dataplane/README.md), for twinlane's default tree (strict inference lane) and for
# one FIFO, in the run-to-completion layout (`lcores: {single: 1}`, EAL -l 1) and the two-lcore
# layout (`lcores: auto`, -l 0-1: RX lcore -> lane rings -> scheduler lcore).
#
#   tools/bench_realtime_latency.sh [TWINLANE|BUILD_DIR] [--benchmark_min_time=...]
#   RUNS=3 DURATION=200ms tools/bench_realtime_latency.sh   (defaults; the medians are printed)
#   SUMMARY=FILE   also write every run's numbers as JSON (the integration test reads it)
#   RATE=5G        the trace's link rate and both ports' rates (default 10G)
#   PACE=25G       `twinlane run --pace-input 25G`: the trace is handed over at its capture
#                  timing serialised at 25G, latency counted from each frame's arrival on that
#                  link (dataplane/README.md, "Paced input"); the log line on frames read late
#                  is printed per run
#                  With PACE the same trace is also replayed in virtual time (`twinlane replay
#                  --ingress-rate PACE`, the same arrivals): the scheduler's own latency, which
#                  the realtime numbers less are the pipeline's (and the machine's) part;
#                  and a third case, "no train": the same inference and other frames with no
#                  training, through twinlane's tree: the floor of this machine and loop
#   SPLIT=1        with PACE and PRELOAD: training on an RX port of its own and inference and
#                  other (the generator's edge-link traffic) on another, both forwarding to the
#                  egress, as on a gateway whose GPU hosts and frontends reach it by different
#                  links: the same seed's trace generated with only training, and with none;
#                  the preloaded captures share one clock; the virtual-time reference
#                  replays the two captures the same way, each on an ingress link of its own
#                  (`twinlane replay -i in=train.pcap -i edge=alone.pcap`)
#   PRELOAD=1      with PACE: `--preload-input`, the trace is read into the mbuf pool before
#                  the run, so the lcore does not read the file during it (as a NIC's
#                  descriptors arrive filled); EAL memory grows by the trace's mbufs
# A --benchmark_min_time argument (tools/test.sh passes one to every benchmark) makes it a brief
# run: one run per case of a 50 ms trace.
#
# Input: `twinlane gen` at its defaults for a 10G link (training 110% of it, inference 5%,
# other 2%; training in 4-9 KB jumbo frames, inference in frames of at most 1514 bytes), read
# by net_pcap on the ingress port from a file in /dev/shm (in memory: a trace on disk stalled
# the lcore in read() for up to 2 s once the page cache dropped it). net_pcap does not pace by
# the timestamps: it delivers the trace as fast as the RX lcore polls, one read() per frame, so
# the input runs at the lcore's reading speed (input Gbit/s below), and frame sizes that read
# faster (inference's) arrive closer together than on a wire. Below 10G the input therefore
# overloads the port whatever the trace's loads. With RATE=2.5G and no training (7% of the link
# offered), the 200 ms trace (4.4 MB) was served in 17 ms, 14 of them the drain at 2.5G, so it
# was read in about 3.5 ms, 4x the port's rate (inferred, not timed). Inference waited 1.5 ms
# at p50 there, where replay of the same loads spread evenly over 18 ms gives 5 us: the input's
# burst, not the pipeline's. Input Gbit/s, over the serving time, then includes the drain.
# TX goes to net_null: a NIC's TX costs tens of cycles per frame, net_pcap's writes to a file
# thousands (it linearises and copies every jumbo frame on the lcore), which is not the
# pipeline's cost. The default-like
# policy is conf/default.yaml's tree and classifier with these two ports (mtu 9000, the
# default 20 us tx_budget and 5 us burst_time); the FIFO policy is one class `all` in one fifo
# leaf (the default 1024 packets / 4 MiB limit). In a FIFO every packet waits in the same
# queue, so that class's latency is what an inference packet sees there.
#
# Latency is from the RX burst (as the PMD returns it) to acceptance by tx_burst, the
# pipeline's part; on the wire a packet then follows at most the TX budget of bytes already
# handed to the NIC. The goal line: inference p99 <= one maximum frame at the port rate (9018 B
# at 10G: 7.2 us) + 10 us. "loop passes": each lcore's busy passes from the run report (what a
# packet arriving in a pass may wait for), "unpolled max" the longest from one pass's start to
# the next's, idle passes included (poll_gap_max_ns: a stall in an idle pass shows only there,
# and with paced input the frames due meanwhile wait for it), and how long its thread was
# runnable but off its CPU since the loop started, with how many preemptions (the report's
# run_ns, runqueue_wait_ns and involuntary_switches): on a shared machine, the time slices
# other threads took. Input and egress Gbit/s are frame bytes over the serving time less the
# 200 ms of idle input before the run stops.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
twinlane=${1:-$here/../build}
[ -d "$twinlane" ] && twinlane=$twinlane/dataplane/twinlane
[ -x "$twinlane" ] || { echo "no twinlane binary at $twinlane" >&2; exit 1; }
twinlane=$(realpath "$twinlane")
runs=${RUNS:-3}
stall_seconds=1
duration=${DURATION:-200ms}
rate=${RATE:-10G}
# The port rate in bit/s, parsed once for the policies and the goal line.
rate_bps=$(python3 -c '
import re, sys
m = re.fullmatch(r"([0-9.]+)([KMGT]?)", sys.argv[1])
if not m: sys.exit(f"RATE={sys.argv[1]}: not a rate like 10G")
print(int(float(m.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m.group(2)]))
' "$rate")
for arg in "${@:2}"; do
    case $arg in
        --benchmark_min_time=*) runs=1 duration=50ms stall_seconds=0.3 ;;
    esac
done

work=$(mktemp -d /dev/shm/twinlane-latency.XXXXXX 2>/dev/null || mktemp -d /tmp/twinlane-latency.XXXXXX)
trap 'rm -rf "$work" /var/run/dpdk/tllat$$' EXIT
cd "$work"
# Its own runtime directory: DPDK's telemetry init connects to the socket of any other process
# using the default one, and blocks while that process is stopped (a paused benchmark).
preload=${PRELOAD:-}
[ -z "$preload" ] || [ -n "${PACE:-}" ] || { echo "PRELOAD needs PACE" >&2; exit 1; }
split=${SPLIT:-}
[ -z "$split" ] || [ -n "$preload" ] || { echo "SPLIT needs PACE and PRELOAD" >&2; exit 1; }

"$twinlane" --log-level warn gen -o in.pcap --link-rate "$rate" --duration "$duration" >gen.txt
# With PACE, the floor: the same seed's inference and other traffic (the same frames) with no
# training at all, through the same tree ("no train"). Inference then queues behind nothing
# but itself and the machine (its CPU stalls, the loop's passes): what no scheduling can go
# below on this machine. (Unpaced, the input's own burst at reading speed would be measured.)
kinds="twinlane fifo"
if [ -n "${PACE:-}" ]; then
    kinds="$kinds alone"
    "$twinlane" --log-level warn gen -o alone.pcap --link-rate "$rate" --duration "$duration" \
        --training-load 0 >gen-alone.txt
fi
# Preloaded, the trace's frames sit in mbufs: about 1.7x their bytes (2 KiB data rooms of a
# 2.4 KiB footprint, the last one of a chain part-filled). The pool is one allocation from
# EAL's heap, beside the schedulers' and flow tables': twice the trace on top of 1 GiB.
memory=512
[ -z "$preload" ] || memory=$((1024 + $(stat -c %s in.pcap) * 2 / 1048576))
if [ -n "$split" ]; then
    # The generator's sources draw from their own streams: with the other loads at 0 it writes
    # the same training frames, and alone.pcap holds the rest, so together they are in.pcap.
    "$twinlane" --log-level warn gen -o train.pcap --link-rate "$rate" --duration "$duration" \
        --inference-load 0 --other-load 0 >gen-train.txt
fi
eal=(--no-huge --no-pci --no-shconf -m "$memory" --log-level=error --file-prefix "tllat$$")

# policy KIND LCORES: policy-KIND-LCORES.yaml (KIND twinlane | fifo | alone: twinlane's tree
# fed alone.pcap).
policy() {
    python3 - "$1" "$2" "$here/../conf/default.yaml" "$rate" "$rate_bps" "$split" <<'PY'
import sys, yaml
kind, lcores, default, rate, rate_bps, split = *sys.argv[1:5], int(sys.argv[5]), sys.argv[6]
p = yaml.safe_load(open(default))
trace = "alone.pcap" if kind == "alone" else "in.pcap"
p["ports"] = [
    {"name": "in", "device": f"net_pcap0,rx_pcap={trace}", "rate": rate, "mtu": 9000},
    {"name": "out", "device": "net_null1", "rate": rate, "mtu": 9000},
]
if split and kind != "alone":
    p["ports"][0]["device"] = "net_pcap0,rx_pcap=train.pcap"
    p["ports"].insert(1, {"name": "edge", "device": "net_pcap2,rx_pcap=alone.pcap", "rate": rate,
                          "mtu": 9000})
# The default 20 us TX budget holds less than one 9018 B frame below 3.6G: one frame's time.
frame_us = 9018 * 8 / rate_bps * 1e6
if frame_us > 20:
    for port in p["ports"]:
        port["tx_budget"] = f"{int(frame_us) + 1}us"
p["forwarding"] = [{"from": port["name"], "to": "out"} for port in p["ports"][:-1]]
p["lcores"] = yaml.safe_load(lcores)
p["metrics"] = {"enabled": False}
p.pop("control", None)
p["log_level"] = "warn"
if kind == "fifo":
    p["classes"] = ["all"]
    p["scheduler"] = {"name": "root", "kind": "fifo", "class": "all"}
    p["classifier"] = {"heuristics": {"default_class": "all"}}
name = f"policy-{kind}-{'single' if 'single' in lcores else 'auto'}.yaml"
yaml.safe_dump(p, open(name, "w"), sort_keys=False)
PY
}

# run KIND LAYOUT N: one `twinlane run`, its report in KIND-LAYOUT-N.json.
run() {
    local lcores=auto eal_lcores=0-1 rc=0
    if [ "$2" = single ]; then lcores="{single: 1}" eal_lcores=1; fi
    policy "$1" "$lcores"
    timeout 120 "$twinlane" --log-level warn run --json --no-control ${PACE:+--pace-input "$PACE"} ${preload:+--preload-input} \
        -c "policy-$1-$2.yaml" \
        -- "${eal[@]}" -l "$eal_lcores" >"$1-$2-$3.json" 2>"$1-$2-$3.err" || rc=$?
    [ "$rc" -eq 0 ] || { echo "twinlane run ($1, $2) failed: $(cat "$1-$2-$3.err")" >&2; exit 1; }
    if [ -n "${PACE:-}" ]; then  # logged as a warning when frames were read late
        echo "  $1 $2 run $3: $(grep -o "paced input.*" "$1-$2-$3.err" || echo "paced input: no frame read late")"
    fi
}

# What the machine itself takes from a busy lcore (tools/cpu_stalls.py), before and after the
# runs: on a shared VM a pinned loop loses its CPU thousands of times a second.
python3 "$here/cpu_stalls.py" --seconds "$stall_seconds" --json stalls-before.json 0 1 | sed 's/^/  before: /'

# With PACE: the same arrivals in virtual time, per policy (the tree is the same in both layouts).
if [ -n "${PACE:-}" ]; then
    inputs=(-i in.pcap)
    [ -z "$split" ] || inputs=(-i in=train.pcap -i edge=alone.pcap)
    for kind in twinlane fifo; do
        policy "$kind" "{single: 1}"
        bulk=training
        [ "$kind" = twinlane ] || bulk=all
        "$twinlane" --log-level warn replay --json --port out --ingress-rate "$PACE" --bulk-class "$bulk" \
            -c "policy-$kind-single.yaml" "${inputs[@]}" >"virtual-$kind.json"
    done
fi

# Alternated, so that a slower moment of a shared machine does not fall on one case only.
for n in $(seq "$runs"); do
    for layout in single auto; do
        for kind in $kinds; do run "$kind" "$layout" "$n"; done
    done
done

python3 "$here/cpu_stalls.py" --seconds "$stall_seconds" --json stalls-after.json 0 1 | sed 's/^/  after:  /'

python3 - "$runs" "${SUMMARY:-}" "$duration" "$rate" "$rate_bps" <<'PY'
import json, os, statistics, sys
runs, summary_path, duration, rate_text = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
FRAME_US = (9000 + 18) * 8 / int(sys.argv[5]) * 1e6  # one maximum frame (mtu 9000) at the port rate
GOAL_US = FRAME_US + 10
LAYOUTS = {"single": "run to completion (1 lcore)", "auto": "RX lcore + scheduler lcore"}
out, rows = {"goal_p99_us": GOAL_US, "cases": []}, {}
for layout in LAYOUTS:
    for kind in ("twinlane", "fifo", "alone"):
        if not os.path.exists(f"{kind}-{layout}-1.json"):
            continue
        reports = [json.load(open(f"{kind}-{layout}-{n}.json")) for n in range(1, runs + 1)]
        cls = "all" if kind == "fifo" else "inference"
        lat = []
        for r in reports:
            c = next(k for k in r["classes"] if k["name"] == cls)
            lat.append({q: c[f"latency_{q}_ns"] / 1e3 for q in ("p50", "p99", "p999", "max")}
                       | {"packets": c["tx_packets"],
                          "balanced": r["rx_packets"] == r["tx_packets"]
                          + sum(r["dropped"].values()) + r["queued"],
                          "rx": r["rx_packets"], "tx": r["tx_packets"],
                          "dropped": sum(r["dropped"].values()), "queued": r["queued"],
                          "elapsed_s": r["elapsed_s"],
                          "input_gbps": r["rx_bytes"] * 8 / 1e9 / max(r["elapsed_s"] - 0.2, 1e-3),
                          "egress_gbps": r["tx_bytes"] * 8 / 1e9 / max(r["elapsed_s"] - 0.2, 1e-3),
                          # Per lcore: its busy passes, us, and what other threads took
                          # from its CPU since the loop started (absent where /proc cannot say).
                          "loops": {l["role"]: {q: l[f"pass_{q}_ns"] / 1e3
                                                for q in ("p50", "p99", "max")}
                                    | {"unpolled_max": l["poll_gap_max_ns"] / 1e3}
                                    | ({"runqueue_wait_ms": l["runqueue_wait_ns"] / 1e6,
                                        "preemptions": l["involuntary_switches"]}
                                       if "runqueue_wait_ns" in l else {})
                                    for l in r.get("loops", [])},
                          "cycles_per_packet": r["cycles_per_packet"]})
        med = {q: statistics.median(x[q] for x in lat) for q in ("p50", "p99", "p999", "max")}
        rows[(layout, kind)] = med
        out["cases"].append({"layout": layout, "policy": kind, "class": cls, "median": med,
                             "runs": lat})
pace = os.environ.get("PACE", "")
print(f"inference RX->TX latency, training at 110% of a {rate_text} egress, inference 5% "
      f"({duration} trace, median of {runs} run(s), "
      f"{'paced at ' + pace if pace else 'read as fast as polled'}"
      f"{'; training and the edge traffic on RX ports of their own' if os.environ.get('SPLIT') else ''}"
      f"), us")
print(f"{'layout':30} {'policy':9} {'p50':>8} {'p99':>8} {'p999':>8} {'max':>9} "
      f"{'FIFO/twinlane p99':>18}")
for layout, label in LAYOUTS.items():
    t, f = rows[(layout, "twinlane")], rows[(layout, "fifo")]
    ratio = f["p99"] / t["p99"] if t["p99"] > 0 else float("inf")
    out.setdefault("ratio_p99", {})[layout] = ratio
    for kind, m, extra in (("twinlane", t, ""), ("one FIFO", f, f"{ratio:17.0f}x")):
        print(f"{label:30} {kind:9} {m['p50']:8.1f} {m['p99']:8.1f} {m['p999']:8.1f} "
              f"{m['max']:9.1f} {extra:>18}")
    if (layout, "alone") in rows:
        a = rows[(layout, "alone")]
        print(f"{label:30} {'no train':9} {a['p50']:8.1f} {a['p99']:8.1f} {a['p999']:8.1f} "
              f"{a['max']:9.1f}")
# The same arrivals in virtual time (PACE only): the scheduler's own latency of each class.
virtual = {}
for kind, cls in (("twinlane", "inference"), ("fifo", "all")):
    try:
        report = json.load(open(f"virtual-{kind}.json"))[0]
    except (OSError, ValueError):
        continue
    cdf = report["classes"][cls]["latency_cdf_us"]
    # The CDF is of the packets sent; the last point is the max.
    virtual[kind] = {q: next((x for x, p in cdf if p >= f - 1e-9), cdf[-1][0])
                     for q, f in (("p50", 0.5), ("p99", 0.99), ("p999", 0.999), ("max", 1.0))}
    m = virtual[kind]
    label = "virtual time (twinlane replay)"
    print(f"{label:30} {'twinlane' if kind == 'twinlane' else 'one FIFO':9} {m['p50']:8.1f} "
          f"{m['p99']:8.1f} {m['p999']:8.1f} {m['max']:9.1f}")
if virtual:
    out["virtual"] = virtual
stalls = {}
for when in ("before", "after"):
    try:
        stalls[when] = json.load(open(f"stalls-{when}.json"))
    except (OSError, ValueError):
        pass
out["cpu_stalls"] = stalls
for layout, label in LAYOUTS.items():
    p99 = rows[(layout, "twinlane")]["p99"]
    print(f"goal: inference p99 <= one maximum frame at {rate_text} ({FRAME_US:.1f} us) + 10 us = "
          f"{GOAL_US:.1f} us: {label}: {p99:.1f} us, {'met' if p99 <= GOAL_US else 'MISSED'}")
    if (layout, "alone") in rows:
        alone = rows[(layout, "alone")]["p99"]
        print(f"      the same inference with no training at all (the floor of this machine and "
              f"loop): p99 {alone:.1f} us, {'within' if alone <= GOAL_US else 'above'} the goal")
    if "twinlane" in virtual:
        # The scheduler's own p99 for these arrivals, plus the pipeline's 10 us.
        own = p99 - virtual["twinlane"]["p99"]
        print(f"      the same arrivals in virtual time: p99 {virtual['twinlane']['p99']:.1f} us; "
              f"the pipeline and the machine add {own:.1f} us at p99 "
              f"({'within' if own <= 10 else 'above'} the 10 us)")
if stalls:
    waits = [r["random_arrival_wait_us"]["p99"] for s in stalls.values() for r in s.values()]
    print(f"      this machine's CPUs alone (busy loop, before and after): a random arrival "
          f"waits {min(waits):.1f}-{max(waits):.1f} us at p99 for its CPU")
for case in out["cases"]:
    r = case["runs"][0]
    print(f"  {case['layout']:6} {case['policy']:8}: rx {r['rx']} tx {r['tx']} dropped "
          f"{r['dropped']} queued {r['queued']} ({'balanced' if r['balanced'] else 'UNBALANCED'})"
          f", {case['class']} sent {r['packets']}, input {r['input_gbps']:.1f} Gbit/s, egress "
          f"{r['egress_gbps']:.1f} Gbit/s, "
          f"elapsed {r['elapsed_s']:.2f} s, cycles/packet "
          + ", ".join(f"{k} {v:.0f}" for k, v in r["cycles_per_packet"].items()))
    for role, l in r["loops"].items():
        taken = (f"; its CPU taken {l['runqueue_wait_ms']:.1f} ms, {l['preemptions']} "
                 f"preemptions" if "runqueue_wait_ms" in l else "")
        print(f"      {role}: loop passes p50 {l['p50']:.1f} us, p99 {l['p99']:.1f}, "
              f"max {l['max']:.1f}, unpolled max {l['unpolled_max']:.1f}{taken}")
if summary_path:
    json.dump(out, open(summary_path, "w"), indent=1)
PY
