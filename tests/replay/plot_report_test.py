#!/usr/bin/env python3
"""tools/plot_report.py on synthetic replay reports: full, with SLO windows, sparse and malformed."""

import json
import os
import subprocess
import sys
import tempfile

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def full_report(discipline, scale):
    classes = {}
    for index, name in enumerate(["inference", "training", "other"]):
        base = (index + 1) * scale
        classes[name] = {
            "rx_packets": 1000, "tx_packets": 990, "tx_bytes": 1_000_000, "drops": 10,
            "ecn_marked": 5, "throughput_bps": 1e9 * (index + 1),
            "latency_us": {"p50": base, "p90": 2 * base, "p99": 5 * base,
                           "p999": 9 * base, "max": 20 * base},
            "latency_cdf_us": [[base * (1 + k / 10), k / 50] for k in range(51)],
            "throughput_series": {"interval_s": 0.001,
                                  "bps": [1e9 * (index + 1) + 1e7 * k for k in range(50)]},
        }
    return {"discipline": discipline, "link_rate_bps": 1e10, "duration_s": 0.05,
            "totals": {}, "classes": classes, "fairness": {}}


def run(script, args):
    return subprocess.run([sys.executable, script] + args, capture_output=True, text=True,
                          check=False)


def check_png(path):
    assert os.path.exists(path), f"missing {path}"
    with open(path, "rb") as handle:
        assert handle.read(8) == PNG_MAGIC, f"{path} is not a PNG"
    assert os.path.getsize(path) > 5000, f"{path} is suspiciously small"


def main():
    script = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for discipline, scale in [("twinlane", 5.0), ("fifo", 800.0)]:
            path = os.path.join(tmp, f"{discipline}.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(full_report(discipline, scale), handle)
            paths.append(path)

        out = os.path.join(tmp, "full")
        result = run(script, paths + ["--out-dir", out])
        assert result.returncode == 0, result.stderr
        for name in ["latency_cdf.png", "throughput.png", "latency_p99.png"]:
            check_png(os.path.join(out, name))

        assert not os.path.exists(os.path.join(out, "slo_windows.png"))  # no slo section

        # With an slo section (with and without the controller): the per-window plot.
        slo_paths = []
        for actions, worst in [(["adapt_cap", "downgrade"], 40.0), (["alert"], 3000.0)]:
            report = full_report("twinlane", 5.0)
            report["slo"] = {"classes": {
                "inference": {
                    "objective": {"percentile": "p99", "target_us": 50.0, "window_s": 0.001,
                                  "actions": actions},
                    "series": {"t_s": [k / 1000 for k in range(50)],
                               "percentile_us": [worst if 10 <= k < 30 else 5.0
                                                 for k in range(50)],
                               "cap_bps": [9e9 if 10 <= k < 30 else 5e9 for k in range(50)]
                               if len(actions) > 1 else [0] * 50}},
                "training": {"objective": {"min_share": 0.1, "window_s": 0.001,
                                           "actions": ["alert"]}}}}
            path = os.path.join(tmp, f"slo-{len(slo_paths)}.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(report, handle)
            slo_paths.append(path)
        out = os.path.join(tmp, "slo")
        result = run(script, slo_paths + ["--out-dir", out])
        assert result.returncode == 0, result.stderr
        check_png(os.path.join(out, "slo_windows.png"))

        # PFC pause intervals are shaded on the throughput plot; malformed ones are skipped.
        lossless = full_report("twinlane", 5.0)
        lossless["pfc"] = [{"priority": 3,
                            "sender_paused_intervals_ms": [[10.0, 12.5], [20.0, "x"], [30]],
                            "egress_held_intervals_ms": [[40.0, 42.0]]},
                           {"priority": 4, "egress_held_intervals_ms": "bad"}, "junk"]
        path = os.path.join(tmp, "lossless.json")
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(lossless, handle)
        shaded = os.path.join(tmp, "shaded")
        result = run(script, [path, "--out-dir", shaded])
        assert result.returncode == 0, result.stderr
        plain = os.path.join(tmp, "plain")
        result = run(script, [paths[0], "--out-dir", plain])
        assert result.returncode == 0, result.stderr
        check_png(os.path.join(shaded, "throughput.png"))
        with open(os.path.join(shaded, "throughput.png"), "rb") as a, \
                open(os.path.join(plain, "throughput.png"), "rb") as b:
            assert a.read() != b.read(), "pause intervals did not change the throughput plot"

        # Only percentiles: the CDF and p99 plots are drawn, throughput is skipped.
        sparse = os.path.join(tmp, "sparse.json")
        with open(sparse, "w", encoding="utf-8") as handle:
            json.dump({"classes": {"inference": {"latency_us": {"p50": 3, "p99": 40}}}}, handle)
        out = os.path.join(tmp, "sparse")
        result = run(script, [sparse, "--out-dir", out])
        assert result.returncode == 0, result.stderr
        check_png(os.path.join(out, "latency_cdf.png"))
        check_png(os.path.join(out, "latency_p99.png"))
        assert not os.path.exists(os.path.join(out, "throughput.png"))
        assert "throughput.png" in result.stderr

        broken = os.path.join(tmp, "broken.json")
        with open(broken, "w", encoding="utf-8") as handle:
            handle.write("{not json")
        result = run(script, [broken, "--out-dir", os.path.join(tmp, "broken")])
        assert result.returncode != 0
        assert "broken.json" in result.stderr, result.stderr
    print("plot_report: ok")


if __name__ == "__main__":
    main()
