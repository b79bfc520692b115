#!/usr/bin/env python3
"""deploy/grafana/twinlane.json is an importable dashboard for a fleet (stdlib only):

  grafana_dashboard_test.py DASHBOARD.json CONTROL_README.md

- a current schemaVersion, a uid, a `datasource` variable every panel and query uses (so it
  imports into any Grafana without editing), and a `gateway` variable over the instance label
  that every query filters on;
- panel ids unique, panels inside the 24-column grid and not overlapping;
- every twinlane_ series a query names is one control/README.md documents (names stay in step
  with renames), and the views the issue asks for are there: per-class throughput and link
  share, a latency heatmap and p99 per class, drops by reason, ECN marks, queue depths, port
  rates, policy epoch and reload events, SLO attainment and the SLO controller's actions, the
  RX to TX latency per class and the lcores' busy passes and CPU taken.
That every query returns data from a real Prometheus is tests/integration/prometheus_test.sh.
"""
import json
import re
import sys


def main():
    dashboard = json.load(open(sys.argv[1]))
    documented = set(re.findall(r"^\| `(twinlane_[a-z0-9_]+)` \|", open(sys.argv[2]).read(), re.M))
    problems = []

    def need(condition, what):
        if not condition:
            problems.append(what)

    need(dashboard.get("schemaVersion", 0) >= 39, "schemaVersion below 39 (Grafana 10.4/11)")
    need(dashboard.get("uid") and dashboard.get("title"), "no uid or title")
    need("__inputs" not in dashboard, "uses __inputs: import should not need a manual mapping")
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    need(variables.get("datasource", {}).get("type") == "datasource" and
         variables["datasource"].get("query") == "prometheus", "no Prometheus datasource variable")
    gateway = variables.get("gateway", {})
    need(gateway.get("type") == "query" and
         re.search(r"label_values\(.*, *instance\)", gateway.get("query", {}).get("query", "")),
         "no gateway variable over the instance label")
    need(gateway.get("multi") and gateway.get("includeAll") and gateway.get("allValue") == ".*",
         "gateway variable is not multi-select with All = .*")

    panels = []

    def walk(items):
        for panel in items:
            panels.append(panel)
            walk(panel.get("panels", []))

    walk(dashboard["panels"])
    ids = [p["id"] for p in panels]
    need(len(ids) == len(set(ids)), f"panel ids repeat: {ids}")
    cells = {}
    for p in panels:
        g = p["gridPos"]
        need(0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, f"'{p['title']}' outside the grid")
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                if (x, y) in cells:
                    problems.append(f"'{p['title']}' overlaps '{cells[(x, y)]}'")
                    break
                cells[(x, y)] = p["title"]
            else:
                continue
            break

    exprs = []
    for p in panels:
        if p["type"] == "row":
            continue
        need(p.get("datasource", {}).get("uid") == "${datasource}",
             f"'{p['title']}' does not use the datasource variable")
        need(p.get("targets"), f"'{p['title']}' has no query")
        for t in p.get("targets", []):
            need(t.get("datasource", {}).get("uid") == "${datasource}",
                 f"'{p['title']}' {t.get('refId')}: query not on the datasource variable")
            exprs.append((p, t["expr"]))
    for a in dashboard["annotations"]["list"]:
        if "expr" in a:
            exprs.append(({"title": "annotation " + a["name"], "type": "annotation"}, a["expr"]))
    for p, expr in exprs:
        # Every selector of a twinlane_ series (or up) is narrowed to the chosen gateways.
        for name, labels in re.findall(r"\b(twinlane_[a-z0-9_]+|up)\{([^}]*)\}", expr):
            need('instance=~"$gateway"' in labels, f"'{p['title']}': {name} not filtered by $gateway")
        need(not re.search(r"\btwinlane_[a-z0-9_]+(\[|\)|\s|$)", expr),
             f"'{p['title']}': a twinlane_ series without a label selector: {expr}")
        for name in re.findall(r"\b(twinlane_[a-z0-9_]+?)(?:_bucket|_count|_sum)?\{", expr):
            need(name in documented, f"'{p['title']}': {name} is not a documented series")

    def has(pattern, panel_type=None):
        return any(re.search(pattern, e) and (panel_type is None or p["type"] == panel_type)
                   for p, e in exprs)

    need(has(r"rate\(twinlane_class_bytes_total"), "no per-class throughput")
    need(has(r"twinlane_port_policy_rate_bits_per_second"), "no share of the link")
    need(has(r"twinlane_class_sojourn_seconds_bucket", "heatmap"), "no latency heatmap")
    need(has(r"histogram_quantile\(0\.99, .*twinlane_class_sojourn_seconds_bucket"), "no p99")
    need(has(r"twinlane_class_drops_total.*reason|reason.*twinlane_class_drops_total"),
         "no drops by reason")
    need(has(r"twinlane_class_ecn_marks_total"), "no ECN marks")
    need(has(r"backlog_(bytes|packets)"), "no queue depths")
    need(has(r"twinlane_port_(receive|transmit)_bytes_total"), "no port rates")
    need(has(r"twinlane_policy_epoch", "timeseries"), "no policy epoch panel")
    need(has(r"twinlane_policy_changes_total", "annotation") and
         has(r"twinlane_policy_changes_total", "timeseries"), "no reload events")
    need(has(r"twinlane_class_slo_windows_total") and
         has(r"twinlane_class_slo_last_window_latency_seconds"), "no SLO attainment")
    need(has(r"twinlane_class_slo_cap_bits_per_second") and
         has(r"twinlane_class_slo_downgraded_flows"), "no SLO actions (cap, downgrades)")
    need(has(r"histogram_quantile\(0\.99, .*twinlane_class_pipeline_latency_seconds_bucket"),
         "no RX to TX latency per class")
    need(has(r"twinlane_lcore_runqueue_wait_seconds_total") and
         has(r"twinlane_lcore_busy_pass_seconds_bucket"), "no lcore views (CPU taken, passes)")
    heatmaps = [p for p in panels if p["type"] == "heatmap"]
    need(all(p.get("repeat") == "class" for p in heatmaps), "the heatmap is not one per class")

    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    if not problems:
        print(f"PASS: {len(panels)} panels, {len(exprs)} queries, every one on $datasource and "
              f"$gateway, naming documented series only")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
