#!/usr/bin/env python3
"""tools/count_tests.py on made-up meson logs (stdlib only):

  count_tests_test.py COUNT_TESTS_PY

Every GoogleTest case counts once, a script test once, a skipped case neither; a binary that
crashed before writing its cases counts as one failure; the count line is last and the exit
code says whether anything failed; each failed run's last output lines are printed before it,
the ones that say why (a CI log that keeps only its tail shows them).
"""
import json
import os
import subprocess
import sys
import tempfile

count_tests = sys.argv[1]

JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
 <testsuite name="twinlane:sched / sched_tests" tests="3">
  <testcase classname="Drr" name="SharesByWeight"/>
  <testcase classname="Drr" name="EmptyTree"><skipped/></testcase>
  <testcase classname="Drr" name="Quantum">{failure}</testcase>
 </testsuite>
 <testsuite name="twinlane:integration / realtime_latency" tests="1">
  <testcase classname="twinlane:integration" name="realtime_latency"/>
 </testsuite>
</testsuites>
"""


def logs(directory, failure, runs):
    os.makedirs(directory)
    with open(os.path.join(directory, "testlog.junit.xml"), "w") as f:
        f.write(JUNIT.format(failure="<failure/>" if failure else ""))
    with open(os.path.join(directory, "testlog.json"), "w") as f:
        for name, result, stdout, *stderr in runs:
            run = {"name": name, "result": result, "stdout": stdout}
            if stderr:  # meson writes "stderr" only when the test's stderr was not empty
                run["stderr"] = stderr[0]
            f.write(json.dumps(run) + "\n")
    return directory


def run(*dirs):
    r = subprocess.run([sys.executable, count_tests, *dirs], capture_output=True, text=True)
    return r.returncode, r.stdout.splitlines()


failures = []


def expect(ok, what, output):
    if not ok:
        failures.append(f"{what}:\n" + "\n".join(output))


with tempfile.TemporaryDirectory() as tmp:
    ok_runs = [("twinlane:sched / sched_tests", "OK", "[  PASSED  ] 2 tests.\n"),
               ("twinlane:integration / realtime_latency", "OK", "PASS: balanced\n")]
    good = logs(os.path.join(tmp, "good"), False, ok_runs)
    rc, out = run(good)
    expect(rc == 0 and out[-1] == "tests: 3 passed, 0 failed", "all passed", out)
    expect(any(l.startswith("skipped: ") and "EmptyTree" in l for l in out), "skip shown", out)
    expect(not any("failed run" in l for l in out), "no failed run", out)

    why = "\n".join(f"line {i}" for i in range(80)) + "\nFAIL: paced: latency out of bounds\n"
    bad_runs = [("twinlane:sched / sched_tests", "FAIL", "Quantum failed\n"),
                ("twinlane:integration / realtime_latency", "FAIL", why),
                ("twinlane:replay / crashed", "TIMEOUT", ""),
                ("twinlane:deploy / cli_docs", "FAIL", "", "FAIL: --max-gap is not in the man page\n")]
    bad = logs(os.path.join(tmp, "bad"), True, bad_runs)
    rc, out = run(good, bad)
    # good: 3 passed; bad: 2 passed cases, 1 failed case, but 4 failed runs count as 4.
    expect(rc == 1 and out[-1] == "tests: 5 passed, 4 failed", "failures counted", out)
    expect("  | FAIL: --max-gap is not in the man page" in out, "a reason on stderr printed", out)
    expect("  | FAIL: paced: latency out of bounds" in out, "the reason printed", out)
    expect("  | line 79" in out and "  | line 41" in out and "  | line 40" not in out,
           "only the last 40 lines", out)
    expect(any(l.startswith("full output of every run: ") and "bad/testlog.txt" in l
               for l in out), "where the whole output is", out)
    named = "failed run: twinlane:integration / realtime_latency (FAIL)"
    expect(named in out and "  | FAIL: paced: latency out of bounds" in out[:out.index(named)],
           "reason before the names", out)
    expect("failed run: twinlane:replay / crashed (TIMEOUT)" in out, "timeout named", out)
    expect("failed: twinlane:sched / sched_tests :: Drr.Quantum" in out, "case named", out)

    empty = logs(os.path.join(tmp, "empty"), False, [])
    with open(os.path.join(empty, "testlog.junit.xml"), "w") as f:
        f.write("<testsuites/>")
    rc, out = run(empty)
    expect(rc == 1 and out[-1] == "tests: 0 passed, 0 failed", "nothing ran is a failure", out)

for f in failures:
    print(f"FAIL: {f}")
print(f"count_tests: {'FAIL' if failures else 'PASS'}")
sys.exit(1 if failures else 0)
