#!/usr/bin/env bash
# `twinlane replay` on generated AI traffic: the properties the product promises.
# Usage: replay_test.sh CASE TWINLANE PCAPTOOL POLICY
#   determinism   two runs of every discipline give identical pcaps and reports; the input
#                 given without -i (positional) departs the same
#   properties    conservation; inference p99 within one max bulk frame + 2 us; FIFO's p99
#                 at least 50x larger; training gets >= 95% of what inference leaves; Jain
#                 across equal-weight backlogged jobs >= 0.99
#   microsecond   a microsecond pcap replays with the same packets and accounting
#   malformed     malformed frames are counted by reason, never fatal, and accounted for
#   link_rate     --link-rate rescales the policy: the default policy's 50% inference shaper
#                 is 50G at --link-rate 100G (not the 5G of the file's 10G port), so 8G of
#                 inference keeps its latency bound and loses nothing
#   tiny_limits   per-job fq leaves at the smallest limits `check` accepts (packets: 1;
#                 bytes: 9216) replay and account for every packet (they crashed the
#                 scheduler: SIGSEGV)
#   outputs       an output that is an input (itself, through a symlink, a hard link; the
#                 policy) or another output is refused before anything is written; a run that
#                 fails leaves no output, and an older output stays whole
#   compare_stdin --compare on stdin or a pipe is refused before anything runs (the second
#                 discipline could not read it again); one discipline on stdin replays
#   examples      every example policy next to POLICY replays the mix (and the same mix with a
#                 25x inference surge over 1000 clients) under every discipline with no option
#                 but the input: each accounts for every packet, and reports the fairness of its
#                 bulk class (a policy without a class named `training` names its elephants')
#   unlisted_jobs six and eight RoCE jobs under a policy whose rules name four: the others get
#                 jobs of their own (job_by_source), each in a leaf of its own, and all share
#                 fairly (they all fell into job 0's leaf); and the same jobs in scattered
#                 subnets (pcaptool.py scatter), whose job numbers meet modulo the leaf count
#                 (which put two jobs in one leaf); and 12 or 16 jobs on the 8 leaves, which
#                 then share leaves and still share fairly (a leaf weighs the jobs it holds);
#                 bursty jobs with a surge on inference-slo.yaml's 4 leaves: Jain >= 0.96
#   overlay       the same RoCE jobs and inference wrapped in VXLAN (one outer flow per inner
#                 flow, DSCP 0 and the inner ECN outside): classified by the packet inside
#                 (vxlan_inner), every class and job as without the overlay, as many ECN marks
#                 (on the outer header), inference's p99 within a frame of it
#   merged_inputs several -i inputs: merged by time they depart as the one capture holding
#                 them all; with --ingress-rate each has a link of its own; PORT=FILE names
#                 the ingress port; bad ports and stdin among several are refused
source "$(dirname "$0")/lib.sh"
case_name=$1
twinlane=$(realpath "$2")
pcaptool=$(realpath "$3")
policy=$(realpath "$4")

"$twinlane" gen -o "$WORK/mix.pcap" --seed 11 --duration 50ms >/dev/null

replay() {  # replay OUT_PREFIX [extra args]
    local prefix=$1
    shift
    "$twinlane" --log-level warn replay -c "$policy" -i "$WORK/mix.pcap" \
        --compare fifo,rte_sched -o "$WORK/$prefix.pcap" --report "$WORK/$prefix.json" "$@"
}

max_wire() {  # max_wire PCAP: the largest wire length in it
    python3 - "$1" "$pcaptool" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("pcaptool", sys.argv[2])
tool = importlib.util.module_from_spec(spec); spec.loader.exec_module(tool)
print(max(wire for _, wire, _ in tool.read_records(sys.argv[1])))
PY
}

case "$case_name" in
determinism)
    replay a >/dev/null
    replay b >/dev/null
    for d in twinlane fifo rte_sched; do
        cmp "$WORK/a.$d.pcap" "$WORK/b.$d.pcap" || fail "$d: output pcaps differ between runs"
        cmp "$WORK/a.$d.json" "$WORK/b.$d.json" || fail "$d: reports differ between runs"
        echo "PASS: $d replay is deterministic ($(stat -c %s "$WORK/a.$d.pcap") bytes)"
    done
    # The capture given as a positional argument, as `twinlane check FILE` takes its file.
    "$twinlane" --log-level warn replay -c "$policy" "$WORK/mix.pcap" -o "$WORK/positional.pcap" \
        >/dev/null || fail "replay with a positional input failed"
    cmp "$WORK/a.twinlane.pcap" "$WORK/positional.pcap" ||
        fail "a positional input departs otherwise than -i"
    echo "PASS: the input given without -i departs the same"
    ;;
properties)
    replay p | tee "$WORK/table.txt"
    max_frame=$(max_wire "$WORK/mix.pcap")
    python3 - "$WORK" "$max_frame" <<'PY' || fail "replay properties"
import json, sys
work, max_frame = sys.argv[1], int(sys.argv[2])
r = {d: json.load(open(f"{work}/p.{d}.json")) for d in ("twinlane", "fifo", "rte_sched")}
ok = True
def check(cond, what):
    global ok
    print(("PASS: " if cond else "FAIL: ") + what)
    ok &= bool(cond)
for d, rep in r.items():
    t = rep["totals"]
    dropped = sum(t["dropped"].values())
    check(t["rx_packets"] == t["tx_packets"] + dropped + t["queued_at_end"],
          f"{d}: rx {t['rx_packets']} = tx {t['tx_packets']} + dropped {dropped} + queued {t['queued_at_end']}")
    per_class = sum(c["rx_packets"] for c in rep["classes"].values())
    check(per_class == t["rx_packets"], f"{d}: per-class rx adds up to {t['rx_packets']}")
rate = r["twinlane"]["link_rate_bps"]
bound_us = (max_frame + 24) * 8 / rate * 1e6 + 2.0
p99 = r["twinlane"]["classes"]["inference"]["latency_us"]["p99"]
check(r["twinlane"]["classes"]["inference"]["tx_packets"] > 1000, "enough inference packets to judge")
check(p99 <= bound_us, f"twinlane inference p99 {p99:.2f} us <= {bound_us:.2f} us (max frame {max_frame} B + 2 us)")
fifo_p99 = r["fifo"]["classes"]["inference"]["latency_us"]["p99"]
check(fifo_p99 >= 50 * p99, f"FIFO inference p99 {fifo_p99:.1f} us >= 50 x {p99:.2f} us ({fifo_p99 / p99:.0f}x)")
share = r["twinlane"]["classes"]["training"]["backlogged"]["share_of_left_capacity"]
check(share >= 0.95, f"training uses {share:.3f} of the capacity inference and other leave (>= 0.95)")
jain = r["twinlane"]["fairness"]["jain_jobs"]
check(r["twinlane"]["fairness"]["jobs"] == 4 and jain >= 0.99, f"Jain across 4 equal-weight jobs {jain:.3f} >= 0.99")
sys.exit(0 if ok else 1)
PY
    ;;
microsecond)
    python3 "$pcaptool" to-us "$WORK/mix.pcap" "$WORK/mix_us.pcap"
    "$twinlane" --log-level warn replay -c "$policy" -i "$WORK/mix_us.pcap" --report "$WORK/us.json" \
        -o "$WORK/us_out.pcap" >/dev/null
    python3 - "$WORK/us.json" "$(python3 "$pcaptool" count "$WORK/mix.pcap")" <<'PY' || fail "microsecond pcap"
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
n = int(sys.argv[2])
assert t["rx_packets"] == n, (t, n)
assert t["rx_packets"] == t["tx_packets"] + sum(t["dropped"].values()) + t["queued_at_end"], t
print(f"PASS: microsecond pcap: {n} packets replayed and accounted for")
PY
    ;;
malformed)
    python3 "$pcaptool" malformed "$WORK/bad.pcap" --count 400
    for d in twinlane fifo rte_sched; do
        "$twinlane" --log-level warn replay -c "$policy" -i "$WORK/bad.pcap" --discipline "$d" \
            --report "$WORK/bad.$d.json" >/dev/null || fail "$d: replay failed on malformed input"
        python3 - "$WORK/bad.$d.json" "$d" <<'PY' || fail "$d: malformed accounting"
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
assert t["rx_packets"] == 400, t
assert t["malformed"] == 200, t
assert sum(t["malformed_by_reason"].values()) == 200, t
assert t["rx_packets"] == t["tx_packets"] + sum(t["dropped"].values()) + t["queued_at_end"], t
print(f"PASS: {sys.argv[2]}: 200 malformed of 400 counted by reason {t['malformed_by_reason']}")
PY
    done
    # A capture of a lossless fabric holds MAC control frames (PFC, 802.3x PAUSE): they are
    # the gateway MAC's, consumed and counted (mac_control), never forwarded.
    python3 - "$WORK/mac_control.pcap" <<'PY'
import struct, sys
def udp(i):
    eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
    ip = bytes([0x45, 0, 0, 60, 0, i, 0, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2])
    return eth + ip + struct.pack("!HHHH", 1000, 2000, 40, 0) + bytes(32)
control = b"\x01\x80\xc2\x00\x00\x01" + b"\x04" * 6 + b"\x88\x08"
pfc = control + struct.pack("!HH8H", 0x0101, 0x08, 0, 0, 0, 0xFFFF, 0, 0, 0, 0) + bytes(26)
pause = control + struct.pack("!HH", 0x0001, 0xFFFF) + bytes(42)
out = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)
for i in range(30):
    frame = (udp(i), pfc, pause)[i % 3]
    out += struct.pack("<IIII", 0, 1000 * (i + 1), len(frame), len(frame)) + frame
open(sys.argv[1], "wb").write(out)
PY
    for d in twinlane fifo rte_sched; do
        "$twinlane" --log-level warn replay -c "$policy" -i "$WORK/mac_control.pcap" \
            --discipline "$d" --report "$WORK/mc.$d.json" -o "$WORK/mc.$d.pcap" >/dev/null ||
            fail "$d: replay failed on MAC control frames"
        python3 - "$WORK/mc.$d.json" "$WORK/mc.$d.pcap" "$d" <<'PY' || fail "$d: MAC control"
import json, struct, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
assert t["rx_packets"] == 30 and t["dropped"].get("mac_control") == 20, t
# Consumed before classification, charged to the class of unmatched traffic.
assert r["classes"]["other"]["drops"] == 20, r["classes"]["other"]
assert t["rx_packets"] == t["tx_packets"] + sum(t["dropped"].values()) + t["queued_at_end"], t
data, off, types = open(sys.argv[2], "rb").read(), 24, []
while off + 16 <= len(data):
    caplen = struct.unpack_from("<I", data, off + 8)[0]
    types.append(data[off + 16 + 12:off + 16 + 14])
    off += 16 + caplen
assert types == [b"\x08\x00"] * 10, types
print(f"PASS: {sys.argv[3]}: 20 MAC control frames of 30 consumed (mac_control), none forwarded")
PY
    done
    ;;
link_rate)
    "$twinlane" gen -o "$WORK/fast.pcap" --seed 12 --duration 3ms --link-rate 100G \
        --inference-load 0.08 >/dev/null
    "$twinlane" --log-level warn replay -c "$policy" -i "$WORK/fast.pcap" --link-rate 100G \
        --report "$WORK/fast.json" >/dev/null || fail "replay at --link-rate 100G"
    max_frame=$(max_wire "$WORK/fast.pcap")
    python3 - "$WORK/fast.json" "$max_frame" <<'PY' || fail "link rate"
import json, sys
r = json.load(open(sys.argv[1]))
inference = r["classes"]["inference"]
bound_us = (int(sys.argv[2]) + 24) * 8 / r["link_rate_bps"] * 1e6 + 2.0
p99 = inference["latency_us"]["p99"]
assert r["link_rate_bps"] == 100e9, r["link_rate_bps"]
assert inference["tx_packets"] > 1000 and inference["drops"] == 0, inference
assert p99 <= bound_us, (p99, bound_us)
print(f"PASS: at --link-rate 100G inference p99 {p99:.2f} us <= {bound_us:.2f} us, "
      f"{inference['tx_packets']} packets, no drops")
PY
    ;;
unlisted_jobs)
    # Replays $1: the report must count $2 jobs that shared fairly (Jain >= 0.99); $3 names it.
    jobs_share_fairly() {
        "$twinlane" --log-level warn replay -c "$policy" -i "$1" --report "$WORK/jobs.json" \
            >/dev/null || fail "replay of $3"
        python3 - "$WORK/jobs.json" "$2" "$3" <<'PY' || fail "$3: fairness across jobs"
import json, sys
fairness = json.load(open(sys.argv[1]))["fairness"]
jobs = int(sys.argv[2])
assert fairness["jobs"] == jobs, fairness
assert fairness["jain_jobs"] >= 0.99, fairness
print(f"PASS: {sys.argv[3]}: {jobs} jobs, Jain across them {fairness['jain_jobs']:.3f} >= 0.99")
PY
    }
    for jobs in 6 8; do
        "$twinlane" gen -o "$WORK/jobs.pcap" --seed 4 --duration 50ms --jobs "$jobs" --roce-only \
            --training-load 1.5 >/dev/null
        jobs_share_fairly "$WORK/jobs.pcap" "$jobs" "$jobs RoCE jobs, 4 named by rules"
        # Scattered: job_by_source numbers each /24 from its address (10.a.b -> b modulo
        # the 8 leaves), so homes collide; each job still gets a leaf of its own.
        for seed in 6 7 8; do
            python3 "$pcaptool" scatter "$WORK/jobs.pcap" "$WORK/scattered.pcap" --seed "$seed"
            jobs_share_fairly "$WORK/scattered.pcap" "$jobs" \
                "$jobs RoCE jobs in scattered /24s (seed $seed)"
        done
    done
    # More jobs than the 8 leaves: some leaves hold two jobs. Flow-fair leaves of equal weight
    # gave Jain 0.93 (12 jobs of one flow: a job alone in a leaf got twice a sharer's rate),
    # 0.96 (12 of 4) and 0.95 (16 of 16).
    for shape in 12:1 12:4 16:16; do
        jobs=${shape%:*}
        "$twinlane" gen -o "$WORK/jobs.pcap" --seed 4 --duration 50ms --jobs "$jobs" \
            --flows-per-job "${shape#*:}" --roce-only --training-load 1.5 >/dev/null
        jobs_share_fairly "$WORK/jobs.pcap" "$jobs" "$shape jobs:flows on 8 leaves"
    done
    # Bursty jobs (each sends an iteration's data at once, gen's default training) on the 4
    # leaves of inference-slo.yaml, training above the link, an inference surge: a job whose
    # burst joins a shared leaf mid-round is served within a round of frames. Flow quanta
    # scaled by all of a leaf's flows gave Jain 0.900 and 0.937 here (0.984 and 0.972 now).
    for mix in 1G:64:2:2.94:0.189:1:7 10G:48:16:1.78:0.23:5:13; do
        IFS=: read -r rate jobs flows training inference surge seed <<<"$mix"
        "$twinlane" gen -o "$WORK/bursty.pcap" --link-rate "$rate" --duration 20ms \
            --training-load "$training" --inference-load "$inference" --jobs "$jobs" \
            --flows-per-job "$flows" --seed "$seed" --surge "$surge" --surge-start 5ms \
            --surge-end 15ms >/dev/null
        "$twinlane" --log-level warn replay -c "$(dirname "$policy")/inference-slo.yaml" \
            -i "$WORK/bursty.pcap" --link-rate "$rate" --report "$WORK/bursty.json" >/dev/null ||
            fail "replay of bursty jobs $mix"
        python3 - "$WORK/bursty.json" "$mix" <<'PY' || fail "bursty jobs $mix: fairness across jobs"
import json, sys
report = json.load(open(sys.argv[1]))
fairness = report["fairness"]
assert fairness["jobs"] >= 20 and fairness["jain_jobs"] >= 0.96, fairness
print(f"PASS: bursty jobs {sys.argv[2]} (rate:jobs:flows:training:inference:surge:seed) on 4 "
      f"shared leaves: {fairness['jobs']} jobs, Jain across them {fairness['jain_jobs']:.3f} >= 0.96")
PY
    done
    ;;
overlay)
    "$twinlane" gen -o "$WORK/plain.pcap" --seed 5 --duration 30ms --jobs 6 --roce-only \
        --training-load 1.2 --inference-load 0.1 >/dev/null
    python3 "$pcaptool" vxlan "$WORK/plain.pcap" "$WORK/overlay.pcap"
    for input in plain overlay; do
        "$twinlane" --log-level warn replay -c "$policy" -i "$WORK/$input.pcap" \
            --report "$WORK/$input.json" >/dev/null || fail "replay of the $input capture"
    done
    python3 - "$WORK/plain.json" "$WORK/overlay.json" <<'PY' || fail "overlay: classified otherwise"
import json, sys
plain, overlay = (json.load(open(path)) for path in sys.argv[1:3])
for name in ("inference", "training", "other"):
    a, b = plain["classes"][name]["rx_packets"], overlay["classes"][name]["rx_packets"]
    assert a == b, f"{name}: {a} packets without the overlay, {b} inside it"
assert plain["classes"]["inference"]["rx_packets"] > 0 and plain["classes"]["training"]["rx_packets"] > 0
assert overlay["fairness"]["jobs"] == plain["fairness"]["jobs"] == 6, (plain["fairness"], overlay["fairness"])
assert overlay["fairness"]["jain_jobs"] >= 0.99, overlay["fairness"]
# ECN marks land on the outer header, which carries the inner ECT (as Linux tunnels copy it).
marks = [r["classes"]["training"]["ecn_marked"] for r in (plain, overlay)]
assert marks[0] > 0 and abs(marks[1] - marks[0]) <= 0.05 * marks[0], f"ECN marks {marks}"
p99 = [r["classes"]["inference"]["latency_us"]["p99"] for r in (plain, overlay)]
assert p99[1] <= p99[0] + 7.3, f"inference p99 {p99[1]} us inside the overlay, {p99[0]} without"
t = overlay["totals"]
assert t["rx_packets"] == t["tx_packets"] + sum(t["dropped"].values()) + t["queued_at_end"], t
print(f"PASS: inside VXLAN every class and job as without it "
      f"({overlay['classes']['inference']['rx_packets']} inference, "
      f"{overlay['classes']['training']['rx_packets']} training packets, 6 jobs, Jain "
      f"{overlay['fairness']['jain_jobs']:.3f}, {marks[1]} ECN marks against {marks[0]}); "
      f"inference p99 {p99[1]:.1f} us ({p99[0]:.1f} without)")
PY
    ;;
tiny_limits)
    for limit in "packets: 1" "bytes: 9216" "packets: 2, bytes: 9216"; do
        sed "s/limit: {packets: 2048, bytes: 8MiB}/limit: {$limit}/" "$policy" >"$WORK/tiny.yaml"
        grep -q "limit: {$limit}" "$WORK/tiny.yaml" || fail "no per-job limit to edit in $policy"
        "$twinlane" check -c "$WORK/tiny.yaml" >/dev/null || fail "check refuses limit {$limit}"
        "$twinlane" --log-level warn replay -c "$WORK/tiny.yaml" -i "$WORK/mix.pcap" \
            --report "$WORK/tiny.json" >/dev/null || fail "replay with limit {$limit} exited $?"
        python3 - "$WORK/tiny.json" "$limit" <<'PY' || fail "tiny limit accounting"
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
dropped = sum(t["dropped"].values())
assert t["rx_packets"] == t["tx_packets"] + dropped + t["queued_at_end"], t
# An fq leaf of one packet (or one frame) makes room by pushing out its only packet.
assert t["dropped"].get("fq_overflow", 0) > 0, t["dropped"]
print(f"PASS: per-job limit {{{sys.argv[2]}}}: rx {t['rx_packets']} = tx {t['tx_packets']} + "
      f"dropped {dropped} ({t['dropped']}) + queued {t['queued_at_end']}")
PY
    done
    ;;
outputs)
    cd "$WORK"
    cp mix.pcap keep.pcap
    ln -s mix.pcap link.pcap
    ln mix.pcap hard.pcap
    cp "$policy" policy.yaml
    cp policy.yaml policy.keep
    cp mix.pcap mix.fifo.pcap
    refused() {  # refused WHAT ARGS...: exit 2 and the message, nothing written, inputs whole
        local what=$1 rc=0
        shift
        "$twinlane" --log-level warn replay -c policy.yaml "$@" >out.txt 2>err.txt || rc=$?
        [ "$rc" -eq 2 ] || fail "$what: exit $rc, not 2: $(cat err.txt)"
        grep -Eq "is the input|are the same file" err.txt || fail "$what: $(cat err.txt)"
        cmp -s mix.pcap keep.pcap || fail "$what: the input pcap changed"
        cmp -s policy.yaml policy.keep || fail "$what: the policy changed"
        [ -z "$(ls -A | grep '^\.')" ] || fail "$what: left $(ls -A | grep '^\.')"
        echo "PASS: $what refused: $(grep -Eo "'[^']*' (is the input|and).*" err.txt | head -1)"
    }
    refused "-o the input" -i mix.pcap -o mix.pcap
    refused "-o a symlink to the input" -i mix.pcap -o link.pcap
    refused "-o a hard link to the input" -i mix.pcap -o hard.pcap
    refused "-o the input given as a symlink" -i link.pcap -o "$WORK/mix.pcap"
    refused "--report the input" -i mix.pcap --report ./mix.pcap
    refused "--report the policy" -i mix.pcap --report policy.yaml
    refused "a --compare output that is the input" -i mix.fifo.pcap --compare fifo -o mix.pcap
    refused "-o and --report on one file" -i mix.pcap -o same.out --report same.out
    refused "-o and --report on one file per discipline" -i mix.pcap --compare fifo \
        -o same.pcap --report same.pcap

    # A replay that fails midway (a record length that cannot be, after 500 good records)
    # leaves no output, and outputs of an earlier run stay as they were.
    python3 - mix.pcap bad.pcap <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
offset = 24
for _ in range(500):
    offset += 16 + struct.unpack_from("<I", data, offset + 8)[0]
struct.pack_into("<II", data, offset + 8, 0x7FFFFFFF, 0x7FFFFFFF)
open(sys.argv[2], "wb").write(data)
PY
    "$twinlane" --log-level warn replay -c policy.yaml -i mix.pcap -o out.pcap --report out.json \
        >/dev/null || fail "a good replay failed"
    cp out.pcap out.pcap.keep
    cp out.json out.json.keep
    for outputs in "-o out.pcap --report out.json" "-o new.pcap --report new.json" \
                   "--compare fifo -o new.pcap --report new.json"; do
        rc=0
        # shellcheck disable=SC2086
        "$twinlane" --log-level warn replay -c policy.yaml -i bad.pcap $outputs \
            >/dev/null 2>err.txt || rc=$?
        [ "$rc" -eq 2 ] || fail "replay of a broken pcap ($outputs) exited $rc: $(cat err.txt)"
        cmp -s out.pcap out.pcap.keep && cmp -s out.json out.json.keep ||
            fail "a failed replay ($outputs) changed the earlier outputs"
        leftovers=$(ls -A | grep -E '^\.|^new\.' || true)
        [ -z "$leftovers" ] || fail "a failed replay ($outputs) left: $leftovers"
        echo "PASS: a failed replay ($outputs) left nothing behind: $(head -c 120 err.txt)"
    done
    # Written through a symlink: the link stays, its target gets the new file.
    ln -s out.pcap out-link.pcap
    "$twinlane" --log-level warn replay -c policy.yaml -i mix.pcap --discipline fifo \
        -o out-link.pcap >/dev/null || fail "replay through a symlinked output"
    [ -L out-link.pcap ] || fail "the output symlink was replaced by a file"
    cmp -s out.pcap out.pcap.keep && fail "the symlink's target was not rewritten"
    echo "PASS: an output through a symlink rewrites its target and keeps the link"
    ;;
compare_stdin)
    cd "$WORK"
    rc=0
    timeout 60 "$twinlane" --log-level warn replay -c "$policy" -i - --compare fifo \
        -o s.pcap --report s.json <mix.pcap >out.txt 2>err.txt || rc=$?
    [ "$rc" -eq 2 ] || fail "--compare on stdin exited $rc: $(cat err.txt)"
    grep -q "stdin ('-i -') cannot be read again" err.txt || fail "--compare on stdin: $(cat err.txt)"
    [ ! -s out.txt ] && [ -z "$(ls -A | grep -E '^s\.|^\.')" ] ||
        fail "--compare on stdin ran before refusing: $(cat out.txt; ls -A)"
    mkfifo in.fifo
    rc=0
    timeout 60 "$twinlane" --log-level warn replay -c "$policy" -i in.fifo --compare fifo \
        >out.txt 2>err.txt || rc=$?
    [ "$rc" -eq 2 ] && grep -q "'in.fifo' is not a regular file" err.txt ||
        fail "--compare on a pipe exited $rc: $(cat err.txt)"
    echo "PASS: --compare refuses stdin and pipes before running: $(head -c 150 err.txt)"
    "$twinlane" --log-level warn replay -c "$policy" -i - --report s.json <mix.pcap >/dev/null ||
        fail "one discipline on stdin"
    [ "$(json_field s.json totals rx_packets)" -eq "$(python3 "$pcaptool" count mix.pcap)" ] ||
        fail "stdin replay lost packets"
    echo "PASS: one discipline replays stdin"
    ;;
examples)
    "$twinlane" gen -o "$WORK/surge.pcap" --seed 11 --duration 40ms --surge 25 --surge-start 10ms \
        --surge-end 30ms --clients 1000 --surge-clients 1000 >/dev/null
    count=0
    for example in "$(dirname "$policy")"/*.yaml; do
        for input in mix surge; do
            name="$(basename "$example" .yaml).$input"
            "$twinlane" --log-level warn replay -c "$example" -i "$WORK/$input.pcap" \
                --compare fifo,rte_sched --report "$WORK/$name.json" >/dev/null ||
                fail "$name: replay exited $?"
            python3 - "$WORK" "$name" <<'PY' || fail "$name: accounting"
import json, sys
work, name = sys.argv[1], sys.argv[2]
accounts = []
for d in ("twinlane", "fifo", "rte_sched"):
    r = json.load(open(f"{work}/{name}.{d}.json"))
    t = r["totals"]
    dropped = sum(t["dropped"].values())
    assert t["rx_packets"] > 0, (name, d, t)
    assert t["rx_packets"] == t["tx_packets"] + dropped + t["queued_at_end"], (name, d, t)
    assert sum(c["rx_packets"] for c in r["classes"].values()) == t["rx_packets"], (name, d)
    assert r["fairness"]["class"] in r["classes"], (name, d, r["fairness"])
    accounts.append(f"{d} tx {t['tx_packets']} + dropped {dropped} + queued {t['queued_at_end']}")
print(f"PASS: {name}: rx {t['rx_packets']} = " + " = ".join(accounts) +
      f"; fairness of {r['fairness']['class']}")
PY
            count=$((count + 1))
        done
    done
    [ "$count" -ge 16 ] || fail "only $count example replays"
    ;;
merged_inputs)
    cd "$WORK"
    # The generator's sources draw from streams of their own: the same seed with only training,
    # and with everything but training, are the two halves of mix.pcap.
    "$twinlane" gen -o train.pcap --seed 11 --duration 50ms --inference-load 0 --other-load 0 >/dev/null
    "$twinlane" gen -o edge.pcap --seed 11 --duration 50ms --training-load 0 >/dev/null
    "$twinlane" --log-level warn replay -c "$policy" --port east -i mix.pcap -o one.pcap \
        --report one.json >/dev/null || fail "replay of mix.pcap"
    "$twinlane" --log-level warn replay -c "$policy" --port east -i west=train.pcap -i edge.pcap \
        -o two.pcap --report two.json >two.txt || fail "replay of train.pcap + edge.pcap"
    cmp one.pcap two.pcap || fail "the two halves merged do not depart as mix.pcap does"
    head -1 two.txt | grep -q "replay of train.pcap + edge.pcap" || fail "header: $(head -1 two.txt)"
    echo "PASS: two captures merged by time depart as the one capture holding both ($(python3 "$pcaptool" count two.pcap) packets)"
    for rate in 25G 10G; do
        "$twinlane" --log-level warn replay -c "$policy" --port east --ingress-rate $rate \
            -i train.pcap -i edge.pcap --compare fifo --report split.json >/dev/null ||
            fail "--ingress-rate $rate over two inputs"
        "$twinlane" --log-level warn replay -c "$policy" --port east --ingress-rate $rate \
            -i mix.pcap --report shared.json >/dev/null || fail "--ingress-rate $rate over one input"
        python3 - "$rate" <<'PY' || fail "--ingress-rate $rate: accounting"
import json, sys
split = json.load(open("split.twinlane.json"))
shared = json.load(open("shared.json"))
for r in (split, shared, json.load(open("split.fifo.json"))):
    t = r["totals"]
    assert t["rx_packets"] > 0, t
    assert t["rx_packets"] == t["tx_packets"] + sum(t["dropped"].values()) + t["queued_at_end"], t
assert split["totals"]["rx_packets"] == shared["totals"]["rx_packets"]
p99 = lambda r: r["classes"]["inference"]["latency_us"]["p99"]
print(f"PASS: --ingress-rate {sys.argv[1]}: each input on its own link, rx "
      f"{split['totals']['rx_packets']} accounted for; inference p99 {p99(split):.1f} us "
      f"(training on its own link) vs {p99(shared):.1f} us (one link for all)")
PY
    done
    rc=0
    "$twinlane" --log-level warn replay -c "$policy" --port east -i nosuch=train.pcap \
        >/dev/null 2>err.txt || rc=$?
    [ "$rc" -eq 2 ] && grep -q "has no port named 'nosuch'" err.txt || fail "unknown port: $rc $(cat err.txt)"
    rc=0
    "$twinlane" --log-level warn replay -c "$policy" --port east -i east=train.pcap \
        >/dev/null 2>err.txt || rc=$?
    [ "$rc" -eq 2 ] && grep -q "port 'east' does not forward to the replayed port 'east'" err.txt ||
        fail "port not forwarding: $rc $(cat err.txt)"
    rc=0
    "$twinlane" --log-level warn replay -c "$policy" -i train.pcap -i - <edge.pcap \
        >/dev/null 2>err.txt || rc=$?
    [ "$rc" -eq 2 ] && grep -q "stdin is one input of its own" err.txt || fail "stdin merged: $rc $(cat err.txt)"
    rc=0
    "$twinlane" --log-level warn replay -c "$policy" --port east -i train.pcap -i west=- \
        <edge.pcap >/dev/null 2>err.txt || rc=$?
    [ "$rc" -eq 2 ] && grep -q "stdin is one input of its own" err.txt ||
        fail "stdin as PORT=- merged: $rc $(cat err.txt)"
    rc=0
    "$twinlane" --log-level warn replay -c "$policy" --port east -i west= >/dev/null 2>err.txt ||
        rc=$?
    [ "$rc" -eq 2 ] && grep -q "no FILE after '='" err.txt || fail "PORT= : $rc $(cat err.txt)"
    echo "PASS: PORT=FILE naming an unknown port or one that does not forward there, stdin among several inputs (also as PORT=-), and PORT= without a file, are refused"
    for bad in "--compare fifo,fifo" "--compare fifo -o -" "--ingress-rate ''"; do
        rc=0
        eval "args=($bad)"
        "$twinlane" --log-level warn replay -c "$policy" --port east -i train.pcap "${args[@]}" \
            >/dev/null 2>err.txt || rc=$?
        [ "$rc" -eq 2 ] || fail "$bad: exit $rc: $(cat err.txt)"
        [ -z "$(ls -- -* 2>/dev/null)" ] || fail "$bad wrote $(ls -- -*)"
        echo "PASS: $bad refused: $(head -c 150 err.txt)"
    done
    cp edge.pcap 'x=edge.pcap'
    "$twinlane" --log-level warn replay -c "$policy" -i 'x=edge.pcap' >/dev/null ||
        fail "a file whose name holds '=' is not replayed as that file"
    # Two inputs on one PFC port replay as that port's (the senders on several ports:
    # pfc_replay_test.sh).
    python3 - "$(dirname "$policy")/lossless.yaml" <<'PY'
import sys, yaml
p = yaml.safe_load(open(sys.argv[1]))
p["ports"].append({"name": "north", "device": "net_null2", "rate": "25G", "mtu": 9000})
p["forwarding"].append({"from": "north", "to": "east"})
yaml.safe_dump(p, open("three.yaml", "w"), sort_keys=False)
PY
    "$twinlane" --log-level warn replay -c three.yaml --port east -i west=train.pcap \
        -i west=edge.pcap --report pfc.json >/dev/null || fail "PFC, two inputs on one port"
    [ "$(json_field pfc.json totals rx_packets)" -eq "$(python3 "$pcaptool" count mix.pcap)" ] ||
        fail "PFC, two inputs on one port: not every record arrived"
    # The egress peer's pauses are the egress port's: with PFC on neither ingress port,
    # inputs on two of them replay with --pfc-pause.
    python3 - <<'PY'
import yaml
p = yaml.safe_load(open("three.yaml"))
del p["ports"][0]["pfc"]
yaml.safe_dump(p, open("egress-pfc.yaml", "w"), sort_keys=False)
PY
    "$twinlane" --log-level warn replay -c egress-pfc.yaml --port east -i west=train.pcap \
        -i north=edge.pcap --pfc-pause 10ms:3:2ms --report peer.json >/dev/null 2>err.txt ||
        fail "--pfc-pause, inputs on two ports without PFC: $(cat err.txt)"
    python3 - peer.json <<'PY' || fail "--pfc-pause over two ingress ports"
import json, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
assert t["rx_packets"] == t["tx_packets"] + sum(t["dropped"].values()) + t["queued_at_end"], t
pfc = r["pfc"][0]
assert pfc["pause_frames_received"] == 3 and pfc["pause_frames_sent"] == 0, pfc
assert pfc["ingress"] == [], pfc  # no sender obeys PFC
PY
    echo "PASS: with PFC, two inputs on one port replay;" \
         "the egress peer's pause over inputs on two ports without PFC replays"

    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
