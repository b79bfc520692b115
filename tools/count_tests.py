#!/usr/bin/env python3
"""Counts test cases in meson's junit log: each GoogleTest case, and each script test, once.

Usage: count_tests.py BUILD_DIR/meson-logs [MORE_LOG_DIRS...]
Reads testlog.junit.xml (cases) and testlog.json (one line per test binary or script). A binary
that crashed or timed out before writing its cases still counts as one failure.
Prints the last 40 lines of each failed run's output (so that a CI log that keeps only its tail
still says why), the failing cases, then `tests: N passed, N failed`. Exit code 1 if any failed
or none ran.
"""
import json
import os
import sys
import xml.etree.ElementTree as ET

OK_RESULTS = {"OK", "SKIP", "EXPECTEDFAIL"}
MAX_RUNS_SHOWN = 4  # failed runs whose output's tail is printed
TAIL_LINES = 40


def main():
    passed = failed = 0
    failures = []
    failed_runs = []
    for log_dir in sys.argv[1:]:
        p, f, cases, runs = count(log_dir)
        passed += p
        failed += f
        failures += cases
        failed_runs += runs
    for name, tail in failed_runs[:MAX_RUNS_SHOWN]:
        print(f"== output of the failed run {name}, last lines ==")
        for line in tail:
            print(f"  | {line}")
    for name, _ in failed_runs:
        print(f"failed run: {name}")
    if failed_runs:
        logs = ", ".join(os.path.join(d, "testlog.txt") for d in sys.argv[1:])
        print(f"full output of every run: {logs}")
    for f in failures:
        print(f"failed: {f}")
    print(f"tests: {passed} passed, {failed} failed")
    return 1 if failed or passed == 0 else 0


def count(log_dir):
    root = ET.parse(os.path.join(log_dir, "testlog.junit.xml")).getroot()
    passed = failed = 0
    failures = []
    for suite in root.iter("testsuite"):
        for case in suite.findall("testcase"):
            bad = case.find("failure") is not None or case.find("error") is not None
            if case.find("skipped") is not None and not bad:
                # A skipped case proves nothing, so it is neither passed nor hidden.
                print(f"skipped: {suite.get('name')} {case.get('classname', '')}.{case.get('name')}")
                continue
            if bad:
                failed += 1
                failures.append(f"{suite.get('name')} :: {case.get('classname', '')}.{case.get('name')}")
            else:
                passed += 1
    failed_runs = []
    with open(os.path.join(log_dir, "testlog.json")) as f:
        for line in f:
            if line.strip():
                run = json.loads(line)
                if run.get("result") not in OK_RESULTS:
                    # meson keeps stderr apart ("stderr", when not empty): a script's reason
                    # for failing is often there.
                    output = (run.get("stdout") or "") + (run.get("stderr") or "")
                    tail = output.rstrip("\n").splitlines()[-TAIL_LINES:]
                    failed_runs.append((f"{run.get('name')} ({run.get('result')})", tail))
    return passed, max(failed, len(failed_runs)), failures, failed_runs


if __name__ == "__main__":
    sys.exit(main())
