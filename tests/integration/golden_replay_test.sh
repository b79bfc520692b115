#!/usr/bin/env bash
# Replay's outputs do not change unless a change means them to: the demo's input (tools/demo.sh:
# 50 ms, training at 110% of 10G, inference 5%, other 2%, seed 1) replayed under twinlane, FIFO
# and rte_sched, with conf/default.yaml and with golden_admission.yaml (listed per-job leaves,
# DSCP remarks, elephant moves), must give departure pcaps and JSON reports whose digests are
# the ones recorded in golden_replay.sha256. A change that alters them on purpose records the
# new digests (GOLDEN_UPDATE=1) and says why in its commit.
# Usage: golden_replay_test.sh TWINLANE DEFAULT_POLICY
source "$(dirname "$0")/lib.sh"
twinlane=$1
default_policy=$2
here=$(cd "$(dirname "$0")" && pwd)
recorded="$here/golden_replay.sha256"

"$twinlane" gen -o "$WORK/mix.pcap" --link-rate 10G --duration 50ms --training-load 1.1 \
    --inference-load 0.05 --other-load 0.02 --seed 1 >/dev/null
for name in default admission; do
    policy=$default_policy
    [ "$name" = admission ] && policy="$here/golden_admission.yaml"
    "$twinlane" --log-level warn replay -c "$policy" -i "$WORK/mix.pcap" --link-rate 10G \
        --compare fifo,rte_sched -o "$WORK/$name.pcap" --report "$WORK/$name.json" >/dev/null
    for discipline in twinlane fifo rte_sched; do
        for ext in pcap json; do
            file="$name.$discipline.$ext"
            echo "$(sha256sum "$WORK/$file" | cut -d' ' -f1)  $file"
            rm -f "$WORK/$file"  # 73 MB each
        done
    done
done >"$WORK/digests"

if [ "${GOLDEN_UPDATE:-0}" = 1 ]; then
    cp "$WORK/digests" "$recorded"
    echo "recorded new digests in $recorded"
    exit 0
fi
if ! diff -u "$recorded" "$WORK/digests"; then
    fail "replay outputs changed (above: recorded vs now)"
fi
echo "12 replay outputs identical to the recorded digests"
