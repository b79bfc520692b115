#!/usr/bin/env python3
"""How often a CPU is taken from a busy loop pinned to it, and for how long.

A poll-mode lcore never sleeps, so any time its CPU runs something else (an interrupt, a kernel
thread, the hypervisor running another guest's vCPU) is time every packet in flight waits. This
spins on each given CPU for a while, reading the clock, and records every gap longer than 5 us.
From the gaps it derives what stalls alone add to a packet arriving at a random instant: the
wait until the CPU is back, at p99 and p99.9. No packet latency measured on that CPU can be
reliably below those.

  tools/cpu_stalls.py [--seconds 1] [--json FILE] CPU...
"""
import argparse
import json
import os
import time


def probe(cpu, seconds, threshold_ns=5_000):
    os.sched_setaffinity(0, {cpu})
    clock = time.perf_counter_ns
    gaps = []
    start = last = clock()
    end = start + int(seconds * 1e9)
    while last < end:
        now = clock()
        if now - last > threshold_ns:
            gaps.append(now - last)
        last = now
    return gaps, last - start


def residual_quantile(gaps, total_ns, q):
    """The wait x a random instant exceeds with probability 1-q: sum(max(0, g - x)) / T."""
    target = (1 - q) * total_ns
    lo, hi = 0.0, float(max(gaps, default=0))
    if sum(gaps) <= target:
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if sum(max(0, g - mid) for g in gaps) > target:
            lo = mid
        else:
            hi = mid
    return hi


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cpus", nargs="+", type=int)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    allowed = os.sched_getaffinity(0)
    results = {}
    for cpu in args.cpus:
        if cpu not in allowed:
            raise SystemExit(f"CPU {cpu} is not one this process may use ({sorted(allowed)})")
        gaps, total = probe(cpu, args.seconds)
        per_s = 1e9 / total
        r = {
            "stalls_per_s": {f">{lo}us": round(sum(1 for g in gaps if g > lo * 1000) * per_s)
                             for lo in (5, 20, 50, 100, 200)},
            "stalled_fraction": sum(gaps) / total,
            "longest_us": max(gaps, default=0) / 1e3,
            "random_arrival_wait_us": {
                "p99": residual_quantile(gaps, total, 0.99) / 1e3,
                "p999": residual_quantile(gaps, total, 0.999) / 1e3,
            },
        }
        results[cpu] = r
        counts = ", ".join(f"{k} {v}" for k, v in r["stalls_per_s"].items())
        print(f"CPU {cpu}: a busy loop lost {100 * r['stalled_fraction']:.1f}% of "
              f"{total / 1e9:.1f} s to stalls (per second: {counts}; longest "
              f"{r['longest_us']:.0f} us); a random arrival waits for its CPU "
              f"{r['random_arrival_wait_us']['p99']:.1f} us at p99, "
              f"{r['random_arrival_wait_us']['p999']:.1f} us at p99.9")
    if args.json:
        json.dump(results, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
