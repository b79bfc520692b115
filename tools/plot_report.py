#!/usr/bin/env python3
"""Plot twinlane replay reports: per-class latency CDFs and throughput over time.

Usage: plot_report.py REPORT.json [REPORT.json ...] --out-dir DIR

Each report is the JSON the replay engine writes for one discipline (twinlane, fifo,
rte_sched, ...). Writes into DIR:
  latency_cdf.png   one panel per traffic class, one line per discipline (log-x, µs)
  throughput.png    one panel per discipline, one line per class, link rate dashed; with
                    lossless classes, the time their senders were paused (XOFF to XON) and
                    the egress was held by the peer's pauses is shaded
  latency_p99.png   p99 latency per class, disciplines side by side (log-y)
  slo_windows.png   reports with an "slo" section (twinlane with an slo in the policy): each
                    SLO class's percentile per window against its target (log-y), and the
                    cap the controller set (one line per report, e.g. with and without the
                    controller: --slo-measure-only)
Optional fields may be missing: a class without "latency_cdf_us" falls back to a step CDF
through its percentiles; one without a series is left out of the throughput panel; a plot
with nothing to draw is skipped with a note. Needs only the standard library and matplotlib.
"""

import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

CLASS_ORDER = ["inference", "training", "other"]
PERCENTILES = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999), ("max", 1.0)]


def load_report(path):
    try:
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, json.JSONDecodeError) as error:
        raise SystemExit(f"plot_report: cannot read {path}: {error}")
    if not isinstance(report, dict) or not isinstance(report.get("classes", {}), dict):
        raise SystemExit(f"plot_report: {path}: not a replay report (no 'classes' object)")
    report.setdefault("discipline", os.path.splitext(os.path.basename(path))[0])
    report.setdefault("classes", {})
    return report


def class_names(reports):
    seen = []
    for report in reports:
        for name in report["classes"]:
            if name not in seen:
                seen.append(name)
    ordered = [name for name in CLASS_ORDER if name in seen]
    return ordered + sorted(name for name in seen if name not in CLASS_ORDER)


def latency_cdf(stats):
    """Points (latency_us, fraction) from the CDF, else from the percentiles, else []."""
    points = stats.get("latency_cdf_us")
    if isinstance(points, list):
        cleaned = [(float(p[0]), float(p[1])) for p in points
                   if isinstance(p, (list, tuple)) and len(p) >= 2 and float(p[0]) > 0]
        if cleaned:
            return sorted(cleaned)
    percentiles = stats.get("latency_us") or {}
    return [(float(percentiles[key]), fraction) for key, fraction in PERCENTILES
            if isinstance(percentiles.get(key), (int, float)) and percentiles[key] > 0]


def plot_latency_cdfs(reports, classes, out_dir):
    figure, axes = plt.subplots(1, len(classes), figsize=(5 * len(classes), 4), squeeze=False)
    drew = False
    for axis, name in zip(axes[0], classes):
        for report in reports:
            points = latency_cdf(report["classes"].get(name, {}))
            if not points:
                continue
            xs, ys = zip(*points)
            axis.step(xs, ys, where="post", label=report["discipline"])
            drew = True
        axis.set_xscale("log")
        axis.set_ylim(0, 1.01)
        axis.set_title(f"{name} latency CDF")
        axis.set_xlabel("latency (µs)")
        axis.set_ylabel("fraction of packets")
        axis.grid(True, which="both", alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend()
    return save(figure, out_dir, "latency_cdf.png", drew)


PAUSE_SHADES = [("sender_paused_intervals_ms", "orange", "senders paused (PFC)"),
                ("egress_held_intervals_ms", "purple", "egress held (PFC)")]


def shade_pauses(axis, pfc):
    """Shades the PFC pause intervals of every lossless priority, labelled once each."""
    if not isinstance(pfc, list):
        return
    for key, colour, label in PAUSE_SHADES:
        for priority in pfc:
            intervals = priority.get(key) if isinstance(priority, dict) else None
            for interval in intervals if isinstance(intervals, list) else []:
                if not (isinstance(interval, list) and len(interval) == 2
                        and all(isinstance(t, (int, float)) for t in interval)):
                    continue
                axis.axvspan(interval[0], interval[1], color=colour, alpha=0.2, label=label)
                label = None


def plot_throughput(reports, classes, out_dir):
    figure, axes = plt.subplots(1, len(reports), figsize=(5 * len(reports), 4), squeeze=False,
                                sharey=True)
    drew = False
    for axis, report in zip(axes[0], reports):
        for name in classes:
            series = report["classes"].get(name, {}).get("throughput_series") or {}
            values = series.get("bps") or []
            interval = float(series.get("interval_s") or 0)
            if not values or interval <= 0:
                continue
            times_ms = [(index + 0.5) * interval * 1e3 for index in range(len(values))]
            axis.plot(times_ms, [value / 1e9 for value in values], label=name)
            drew = True
        shade_pauses(axis, report.get("pfc"))
        link = report.get("link_rate_bps")
        if isinstance(link, (int, float)) and link > 0:
            axis.axhline(link / 1e9, linestyle="--", color="grey", label="link rate")
        axis.set_title(f"{report['discipline']}: throughput")
        axis.set_xlabel("time (ms)")
        axis.set_ylabel("Gb/s")
        axis.grid(True, alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend()
    return save(figure, out_dir, "throughput.png", drew)


def plot_p99(reports, classes, out_dir):
    figure, axis = plt.subplots(figsize=(2 + 2 * len(classes), 4))
    width = 0.8 / max(len(reports), 1)
    drew = False
    for offset, report in enumerate(reports):
        xs, heights = [], []
        for index, name in enumerate(classes):
            value = (report["classes"].get(name, {}).get("latency_us") or {}).get("p99")
            if isinstance(value, (int, float)) and value > 0:
                xs.append(index + offset * width)
                heights.append(value)
        if xs:
            axis.bar(xs, heights, width=width, label=report["discipline"])
            drew = True
    axis.set_xticks([index + width * (len(reports) - 1) / 2 for index in range(len(classes))])
    axis.set_xticklabels(classes)
    axis.set_yscale("log")
    axis.set_ylabel("p99 latency (µs)")
    axis.set_title("p99 latency per class")
    axis.grid(True, axis="y", which="both", alpha=0.3)
    if drew:
        axis.legend()
    return save(figure, out_dir, "latency_p99.png", drew)


def plot_slo_windows(reports, out_dir):
    """Per-window percentile against the target, and the cap, of every SLO class."""
    slo_classes = []
    for report in reports:
        for name, cls in ((report.get("slo") or {}).get("classes") or {}).items():
            if (cls.get("objective") or {}).get("target_us") and name not in slo_classes:
                slo_classes.append(name)  # a latency target (not a min_share floor only)
    if not slo_classes:
        return None  # no report has an slo section: nothing to say
    figure, axes = plt.subplots(2, len(slo_classes), figsize=(7 * len(slo_classes), 6),
                                squeeze=False, sharex="col")
    drew = False
    for column, name in enumerate(slo_classes):
        latency, cap = axes[0][column], axes[1][column]
        target = None
        for report in reports:
            cls = ((report.get("slo") or {}).get("classes") or {}).get(name)
            series = (cls or {}).get("series") or {}
            actions = (cls or {}).get("objective", {}).get("actions", [])
            label = f"{report['discipline']} ({' + '.join(actions) or 'alert'})"
            t_ms = [t * 1e3 for t in series.get("t_s", [])]
            values = series.get("percentile_us", [])
            points = [(t, v) for t, v in zip(t_ms, values) if isinstance(v, (int, float)) and v > 0]
            if points:
                latency.plot([p[0] for p in points], [p[1] for p in points], marker=".",
                             label=label)
                drew = True
            caps = series.get("cap_bps", [])
            if caps and any(c for c in caps):
                cap.step(t_ms, [c / 1e9 for c in caps], where="post", label=label)
            objective = cls.get("objective", {}) if cls else {}
            if objective.get("target_us"):
                target = (objective.get("percentile", "p"), objective["target_us"])
        if target:
            latency.axhline(target[1], color="red", linestyle="--",
                            label=f"SLO {target[0]} {target[1]:g} µs")
        latency.set_yscale("log")
        latency.set_ylabel("window percentile (µs)")
        latency.set_title(f"{name}: latency per SLO window")
        latency.grid(True, which="both", alpha=0.3)
        latency.legend()
        cap.set_xlabel("time (ms)")
        cap.set_ylabel("cap (Gbit/s)")
        cap.grid(True, alpha=0.3)
        if cap.get_legend_handles_labels()[0]:
            cap.legend()
    return save(figure, out_dir, "slo_windows.png", drew)


def save(figure, out_dir, name, drew):
    path = os.path.join(out_dir, name)
    if not drew:
        plt.close(figure)
        print(f"plot_report: nothing to draw for {name}, skipped", file=sys.stderr)
        return None
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="replay JSON reports, one per discipline")
    parser.add_argument("--out-dir", required=True, help="directory for the PNG files")
    args = parser.parse_args(argv)

    reports = [load_report(path) for path in args.reports]
    classes = class_names(reports)
    if not classes:
        raise SystemExit("plot_report: the reports contain no classes")
    os.makedirs(args.out_dir, exist_ok=True)
    written = [plot_latency_cdfs(reports, classes, args.out_dir),
               plot_throughput(reports, classes, args.out_dir),
               plot_p99(reports, classes, args.out_dir),
               plot_slo_windows(reports, args.out_dir)]
    for path in written:
        if path:
            print(path)
    return 0 if any(written) else 1


if __name__ == "__main__":
    sys.exit(main())
