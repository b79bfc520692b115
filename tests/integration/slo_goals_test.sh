#!/usr/bin/env bash
# Issue 20's latency-SLO goals in replay (virtual time), by tools/slo_goals.py: training at
# 110% of 10G, inference 10% surging to 25x for 20 ms of a 100 ms trace, p99 <= 50 us per 1 ms
# window under conf/inference-slo.yaml. With the controller (adapt_cap + downgrade) at least
# 99.9% of windows meet the SLO, the fixed cap (--slo-measure-only) misses most surge windows,
# training keeps 90% of what inference leaves while it wants it, the controller settles within
# 10 windows after the surge starts and ends (actions moving >= 5% of a window's bytes), takes
# no action at all more than 10 windows after the surge's end (returns of flows with packets
# still queued below are decided at once), downgrades at most 1.5x the surge's excess over the
# max cap, no flow is reordered, and without a surge the departures are those of the policy
# without its slo keys. The goals table is printed. The surge comes from 32 clients of its own,
# then from 4 heavy ones (6 Gbit/s each, elephants by the policy's classifier: while the
# governor holds them downgraded, the elephant heuristic leaves them there, so the controller
# settles within 10 windows of the start).
# Usage: slo_goals_test.sh TWINLANE POLICY GOALS_SCRIPT
source "$(dirname "$0")/lib.sh"
python3 "$3" "$1" "$2" "$WORK" --check || fail "SLO goals missed (above)"
mkdir "$WORK/few"
python3 "$3" "$1" "$2" "$WORK/few" --surge-clients 4 --check ||
    fail "SLO goals missed with the surge over 4 clients (above)"
