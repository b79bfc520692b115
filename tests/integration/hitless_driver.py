#!/usr/bin/env python3
"""Drives a running twinlane daemon through policy changes while traffic flows, checking after
each one that it took effect on the lcores (stdlib only; hitless_update_test.sh runs it).

  hitless_driver.py TWINLANECTL SOCKET POLICY_A POLICY_B ITERATIONS

Each iteration makes 6 changes through twinlanectl and checks each one:
  policy load A|B (other tree shape) -> status: applied_epoch == policy_epoch, the live tree
      has (or lacks) node `minor`; stats queues lists the same nodes
  class set training weight W     -> status: the live node `training` has weight W
  class set other rate R          -> status: the live node `other` has shaper rate R
  class set inference limit_packets N -> status + policy show
  rules add probe (UDP 7777 -> inference) -> flows: the probe flow is now class inference
  rules del probe                 -> flows: the probe flow is back in class other
Every change must raise the epoch by exactly one. Between iterations the input port's rx
counter must keep growing (traffic flows throughout). Then the refusals: an invalid file
(error with file:line:col), a policy that changes a port rate, one that renames a class's leaf:
each exits 1 and leaves policy show and the epoch unchanged. Finally raw garbage on the socket
gets an error reply and the same connection still answers a valid request.
Prints one summary line; exits non-zero with a reason on the first failure.
"""
import json
import re
import socket
import subprocess
import sys
import time

CTL, SOCK, POLICY_A, POLICY_B, ITERATIONS = sys.argv[1:6]
ITERATIONS = int(ITERATIONS)


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def ctl(*args, expect=0):
    """Runs twinlanectl; returns (stdout, stderr). `expect`: required exit code."""
    p = subprocess.run([CTL, "-s", SOCK, "--timeout", "30s", *args], capture_output=True,
                       text=True, timeout=60)
    if expect is not None and p.returncode != expect:
        fail(f"twinlanectl {' '.join(args)}: exit {p.returncode} (wanted {expect}): "
             f"{p.stdout}{p.stderr}")
    return p.stdout, p.stderr


def ctl_json(*args):
    return json.loads(ctl("-j", *args)[0])


def status():
    return ctl_json("status")


def live_node(name):
    for node in status()["egress"][0]["nodes"]:
        if node["name"] == name:
            return node
    fail(f"live tree has no node '{name}'")


def in_rx():
    return ctl_json("stats", "ports")[0]["rx_packets"]


epoch = status()["policy_epoch"]
change_times = []


def change(*args):
    """One change: epoch + 1, the lcores run it (applied_epoch), returns the reply."""
    global epoch
    start = time.monotonic()
    reply = json.loads(ctl("-j", *args)[0])
    change_times.append(time.monotonic() - start)
    if reply.get("policy_epoch") != epoch + 1:
        fail(f"{args}: epoch {reply.get('policy_epoch')}, expected {epoch + 1}")
    epoch += 1
    s = status()
    if s["policy_epoch"] != epoch or s["applied_epoch"] != epoch:
        fail(f"{args}: status epoch {s['policy_epoch']}, applied {s['applied_epoch']}, "
             f"expected {epoch}")
    return reply


def probe_class():
    for flow in ctl_json("flows", "--top", "10000"):
        if flow["dst_port"] == 7777:
            return flow["class"]
    return None


def wait_probe(wanted):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if probe_class() == wanted:
            return
        time.sleep(0.05)
    fail(f"probe flow never became class {wanted} (now {probe_class()})")


def document():
    return ctl_json("policy", "show")["document"]


def node_in_document(doc, name):
    stack = [doc["ports"][1]["scheduler"]]
    while stack:
        node = stack.pop()
        if node.get("name") == name:
            return node
        stack.extend(node.get("children", []))
    fail(f"policy show has no node '{name}'")


# Traffic is flowing before the first change.
rx0 = in_rx()
time.sleep(0.5)
if in_rx() <= rx0:
    fail("no traffic before the changes")

changes = 0
last_rx = in_rx()
for i in range(ITERATIONS):
    policy = POLICY_B if i % 2 == 0 else POLICY_A  # the daemon starts with A
    change("policy", "load", policy)
    names = [n["name"] for n in status()["egress"][0]["nodes"]]
    queues = [q["node"] for q in ctl_json("stats", "queues")]
    if ("minor" in names) != (policy == POLICY_B) or queues != names:
        fail(f"after loading {policy}: live nodes {names}, stats queues {queues}")

    weight = 4 + i % 4  # the files say 3: always a change
    change("class", "set", "training", "weight", str(weight))
    if live_node("training")["weight"] != weight:
        fail(f"training weight {live_node('training')['weight']}, wanted {weight}")

    rate = [50_000_000, 80_000_000][i % 2]
    change("class", "set", "other", "rate", str(rate))
    if live_node("other")["rate_bits_per_sec"] != rate:
        fail(f"other rate {live_node('other')['rate_bits_per_sec']}, wanted {rate}")

    limit = 20001 + i
    change("class", "set", "inference", "limit_packets", str(limit))
    if live_node("inference")["limit_packets"] != limit:
        fail(f"inference limit {live_node('inference')['limit_packets']}, wanted {limit}")
    if int(node_in_document(document(), "inference")["limit"]["packets"]) != limit:
        fail("policy show does not have the new inference limit")

    change("rules", "add",
           "{name: probe, priority: 5, match: {proto: udp, dst_port: 7777}, "
           "action: {class: inference}}")
    if not any(r["name"] == "probe" for r in ctl_json("rules", "list")):
        fail("rules list lacks the probe rule")
    wait_probe("inference")

    change("rules", "del", "probe")
    wait_probe("other")
    changes += 6

    rx = in_rx()
    if rx <= last_rx:
        fail(f"iteration {i}: input rx stuck at {rx}")
    last_rx = rx

# Refusals leave the running policy untouched.
before = ctl_json("policy", "show")
work = POLICY_A.rsplit("/", 1)[0]
text_a = open(POLICY_A).read()


def refused(name, text, *needles):
    path = f"{work}/{name}"
    with open(path, "w") as f:
        f.write(text)
    out, err = ctl("policy", "load", path, expect=1)
    for needle in needles:
        if not re.search(needle, out + err):
            fail(f"{name}: refusal lacks /{needle}/: {out}{err}")
    if ctl_json("policy", "show") != before:
        fail(f"{name}: policy show changed after a refused load")
    s = status()
    if s["policy_epoch"] != epoch or s["applied_epoch"] != epoch:
        fail(f"{name}: epoch moved to {s['policy_epoch']}/{s['applied_epoch']}")
    return (out + err).strip().splitlines()


invalid = refused("invalid.yaml", text_a.replace("weight: 3,", "weight: -3,"),
                  r"invalid\.yaml:\d+:\d+: ")
ports = refused("ports.yaml", text_a.replace("    rate: 100M\n    tx_budget: 20000\n\n",
                                             "    rate: 200M\n    tx_budget: 20000\n\n"),
                r"only a restart", r"ports\[out\]\.rate: 100000000 -> 200000000")
leaves = refused("leaves.yaml", text_a.replace("{name: training,", "{name: bulk-jobs,"),
                 r"class 'training' would enter other leaves")

# Garbage on the socket: an error reply, and the connection keeps working.
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
    s.settimeout(30)
    s.connect(SOCK)
    s.sendall(b"{nonsense\n"
              b'{"version":1,"id":7,"command":"class.set","args":{"class":1}}\n'
              b'{"version":1,"id":8,"command":"status"}\n')
    replies = []
    buffer = b""
    while len(replies) < 3:
        chunk = s.recv(65536)
        if not chunk:
            fail("daemon closed the connection after garbage")
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            replies.append(json.loads(line))
    if replies[0]["ok"] or "not valid JSON" not in replies[0]["error"]:
        fail(f"garbage got {replies[0]}")
    if replies[1]["ok"] or replies[1]["id"] != 7:
        fail(f"ill-typed args got {replies[1]}")
    if not replies[2]["ok"] or replies[2]["result"]["policy_epoch"] != epoch:
        fail(f"valid request after garbage got {replies[2]}")
if in_rx() <= last_rx:
    fail("traffic stopped during the refusals")

times = sorted(change_times)
print(f"{changes} changes applied while forwarding (epoch {epoch}); per change through "
      f"twinlanectl: median {times[len(times) // 2] * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms; "
      f"refused: invalid file ({invalid[-1].strip()}), port rate ({ports[-1].strip()}), "
      f"renamed leaf; garbage request answered with an error")
