#!/usr/bin/env python3
"""Checks a real Prometheus scraping a running twinlane (prometheus_test.sh; stdlib only).

  prometheus_check.py wait URL
      Until the twinlane target is up and its series have been scraped three times (30 s max).
  prometheus_check.py check URL --since T --readme README --rules RULES --alerts ALERTS
                            --dashboard JSON
      At T (before the test changed the policy) and now:
      - every series in README's metrics table is present now, and every counter and histogram
        (its _count) grew since T, except where its row says "not in the test" (neither) or
        "does not grow in the test";
      - every recording rule in RULES has a result now, and every rule of RULES and ALERTS
        evaluates without error (health ok); TwinlanePolicyReloadFailed fired (the test's
        refused load) and TwinlaneDown / TwinlanePortLinkDown are not firing;
      - every query of the Grafana dashboard JSON (panel targets, annotations; $gateway, $class,
        $port as .*, $__rate_interval as 1m) returns a non-empty result, and each template
        variable's label_values() finds values.
"""
import argparse
import json
import re
import sys
import time
import urllib.parse
import urllib.request


def api(url, path, **params):
    query = urllib.parse.urlencode(params, doseq=True)
    with urllib.request.urlopen(f"{url}/api/v1/{path}?{query}", timeout=30) as reply:
        body = json.load(reply)
    if body.get("status") != "success":
        raise RuntimeError(f"{path} {params}: {body}")
    return body["data"]


def instant(url, expr, at=None):
    params = {"query": expr}
    if at is not None:
        params["time"] = f"{at:.3f}"
    return api(url, "query", **params)["result"]


def wait(args):
    deadline = time.monotonic() + 30
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            targets = api(args.url, "targets")["activeTargets"]
            health = [t["health"] for t in targets if t["labels"].get("job") == "twinlane"]
            # three scrapes of the uptime gauge: rates over them have two intervals
            scraped = instant(args.url, "count_over_time(twinlane_uptime_seconds[1m])")
            count = int(float(scraped[0]["value"][1])) if scraped else 0
            last = f"target health {health}, {count} scrapes"
            if health == ["up"] and count >= 3:
                print(f"prometheus: {last}")
                return 0
        except (OSError, RuntimeError, ValueError) as error:
            last = str(error)
        time.sleep(0.5)
    print(f"prometheus never scraped twinlane three times: {last}", file=sys.stderr)
    return 1


def documented_series(readme):
    """[(name, type, scraped, moves)] from the metrics table: rows `| `twinlane_...` | type |`.
    A row saying "not in the test" is neither looked for nor expected to grow (the test's traffic
    cannot produce it), "does not grow in the test" is looked for only."""
    rows = []
    for line in open(readme):
        match = re.match(r"^\| `(twinlane_[a-z0-9_]+)` \| (counter|gauge|histogram) \|", line)
        if match:
            scraped = "not in the test" not in line
            rows.append((match[1], match[2], scraped,
                         scraped and "does not grow in the test" not in line))
    return rows


def recorded_names(rules_file):
    return re.findall(r"^\s*- record: (\S+)\s*$", open(rules_file).read(), re.M)


def total(url, expr, at=None):
    result = instant(url, f"sum({expr})", at)
    return float(result[0]["value"][1]) if result else None


def expand(expr):
    for var in ("gateway", "class", "port"):
        expr = expr.replace(f"${{{var}}}", ".*").replace(f"${var}", ".*")
    return expr.replace("$__rate_interval", "1m")


def dashboard_queries(dashboard):
    """[(where, expr)] for every panel target (rows included) and annotation query."""
    queries = []

    def walk(panels):
        for panel in panels:
            for target in panel.get("targets", []):
                queries.append((f"panel '{panel['title']}' {target['refId']}", target["expr"]))
            walk(panel.get("panels", []))

    walk(dashboard["panels"])
    for annotation in dashboard["annotations"]["list"]:
        if "expr" in annotation:
            queries.append((f"annotation '{annotation['name']}'", annotation["expr"]))
    return queries


def check(args):
    problems = []
    now = time.time()

    # 1. the documented series: present now, counters grown since --since.
    series = documented_series(args.readme)
    if len(series) < 30:
        problems.append(f"{args.readme}: only {len(series)} series rows found in the table")
    for name, kind, scraped, moves in series:
        present = name + ("_count" if kind == "histogram" else "")
        if not scraped:
            continue
        if not instant(args.url, present):
            problems.append(f"{present}: documented but not scraped")
            continue
        if kind == "gauge" or not moves:
            continue
        before, after = total(args.url, present, args.since), total(args.url, present, now)
        if before is None or after is None or after <= before:
            problems.append(f"{present}: did not grow (sum {before} at the start, {after} now)")
    scraped = sum(1 for _, _, present, _ in series if present)
    growing = sum(1 for _, kind, _, moves in series if kind != "gauge" and moves)
    print(f"series: {len(series)} documented, {scraped} checked present, {growing} for growth")

    # Per class: each one moved, not just their sum.
    for cls in ("inference", "training", "other"):
        grew = [total(args.url, f'twinlane_class_bytes_total{{class="{cls}"}}', t)
                for t in (args.since, now)]
        if None in grew or grew[1] <= grew[0]:
            problems.append(f"class {cls}: bytes sent did not grow {grew}")

    # 2. the rules: recorded series exist, every rule healthy, the reload alert fired.
    for name in recorded_names(args.rules):
        if not instant(args.url, name):
            problems.append(f"recording rule {name}: no result")
    groups = api(args.url, "rules")["groups"]
    loaded = {rule["name"]: rule for group in groups for rule in group["rules"]}
    for rule in loaded.values():
        if rule.get("health") != "ok":
            problems.append(f"rule {rule['name']}: health {rule.get('health')}: "
                            f"{rule.get('lastError')}")
    for alert in re.findall(r"^\s*- alert: (\S+)\s*$", open(args.alerts).read(), re.M):
        if alert not in loaded:
            problems.append(f"alert {alert}: not loaded")
    fired = instant(args.url, 'ALERTS{alertname="TwinlanePolicyReloadFailed"}', now)
    if not fired:
        problems.append("TwinlanePolicyReloadFailed never fired after the refused load")
    for quiet in ("TwinlaneDown", "TwinlanePortLinkDown", "TwinlaneScrapeSectionFailing"):
        if instant(args.url, f'ALERTS{{alertname="{quiet}"}}'):
            problems.append(f"{quiet} is firing on a healthy daemon")
    print(f"rules: {len(loaded)} loaded and healthy; "
          f"{len(recorded_names(args.rules))} recorded series present; "
          f"TwinlanePolicyReloadFailed fired ({fired[0]['metric'].get('alertstate') if fired else '-'})")

    # 3. the dashboard: every query answers with data.
    dashboard = json.load(open(args.dashboard))
    queries = dashboard_queries(dashboard)
    for where, expr in queries:
        try:
            if not instant(args.url, expand(expr)):
                problems.append(f"dashboard {where}: empty result for {expand(expr)}")
        except (OSError, RuntimeError) as error:
            problems.append(f"dashboard {where}: {error}")
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        match = re.fullmatch(r"label_values\((.+), *(\w+)\)", variable["query"]["query"])
        if not match:
            problems.append(f"variable {variable['name']}: not label_values(SERIES, LABEL)")
            continue
        values = api(args.url, f"label/{match[2]}/values", **{"match[]": expand(match[1])})
        if not values:
            problems.append(f"variable {variable['name']}: no values for {match[0]}")
    print(f"dashboard: {len(queries)} queries answered with data")

    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wait")
    w.add_argument("url")
    c = sub.add_parser("check")
    c.add_argument("url")
    c.add_argument("--since", type=float, required=True)
    c.add_argument("--readme", required=True)
    c.add_argument("--rules", required=True)
    c.add_argument("--alerts", required=True)
    c.add_argument("--dashboard", required=True)
    args = parser.parse_args()
    return wait(args) if args.cmd == "wait" else check(args)


if __name__ == "__main__":
    sys.exit(main())
