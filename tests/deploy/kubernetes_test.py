#!/usr/bin/env python3
"""deploy/kubernetes/ without a cluster (python3-yaml):

  kubernetes_test.py DEPLOY_KUBERNETES_DIR TWINLANE

- every *.yaml parses, every document has apiVersion/kind/metadata.name with the apiVersion
  its kind needs, namespaced objects are in the Namespace the directory creates, and the
  kustomization lists exactly the manifests there;
- the DaemonSet: selector matching its pod labels, host network, gateway node selector,
  hugepages requested = limited with a HugePages emptyDir mounted, the capabilities AF_XDP needs
  (all others dropped), Guaranteed QoS, Prometheus scrape annotations on the metrics port, the
  policy from the ConfigMap mounted as a directory and started with `--watch-policy`;
- the ConfigMap's policy passes `twinlane check`, listens for metrics on the annotated port on a
  non-loopback address, puts its control socket where the probe and the host mount look, and
  names the XDP object where the Debian package installs it;
- every option given to `twinlane run` exists in `twinlane run --help`.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

import yaml

API_VERSIONS = {"Namespace": "v1", "ConfigMap": "v1", "DaemonSet": "apps/v1",
                "Kustomization": "kustomize.config.k8s.io/v1beta1"}
AF_XDP_CAPS = {"NET_ADMIN", "NET_RAW", "BPF", "PERFMON", "SYS_ADMIN", "IPC_LOCK"}
XDP_OBJECT = "/usr/lib/twinlane/twinlane_xdp.o"  # dataplane/bpf/meson.build, prefix /usr


def main():
    directory, twinlane = sys.argv[1], sys.argv[2]
    problems = []

    def need(condition, what):
        if not condition:
            problems.append(what)

    docs = []
    files = sorted(glob.glob(os.path.join(directory, "*.yaml")))
    need(files, f"no manifests in {directory}")
    for path in files:
        for doc in yaml.safe_load_all(open(path)):
            if doc is not None:
                docs.append((os.path.basename(path), doc))
    by_kind = {}
    for name, doc in docs:
        kind = doc.get("kind")
        need(kind in API_VERSIONS, f"{name}: unexpected kind {kind}")
        need(doc.get("apiVersion") == API_VERSIONS.get(kind),
             f"{name}: {kind} needs apiVersion {API_VERSIONS.get(kind)}, has {doc.get('apiVersion')}")
        if kind != "Kustomization":
            need(doc.get("metadata", {}).get("name"), f"{name}: {kind} without metadata.name")
        by_kind.setdefault(kind, []).append((name, doc))
    need(len(by_kind.get("Namespace", [])) == 1, "not exactly one Namespace")
    namespace = by_kind["Namespace"][0][1]["metadata"]["name"] if by_kind.get("Namespace") else None
    for kind in ("ConfigMap", "DaemonSet"):
        need(len(by_kind.get(kind, [])) == 1, f"not exactly one {kind}")
        for name, doc in by_kind.get(kind, []):
            need(doc["metadata"].get("namespace") == namespace,
                 f"{name}: {kind} not in namespace {namespace}")
    kustomization = by_kind.get("Kustomization", [(None, {})])[0][1]
    need(sorted(kustomization.get("resources", [])) ==
         sorted(n for n in map(os.path.basename, files) if n != "kustomization.yaml"),
         f"kustomization resources {kustomization.get('resources')} are not the manifests")
    if problems:
        return report(problems)

    configmap = by_kind["ConfigMap"][0][1]
    daemonset = by_kind["DaemonSet"][0][1]
    spec = daemonset["spec"]
    pod = spec["template"]
    pod_spec = pod["spec"]
    labels = pod["metadata"].get("labels", {})
    need(spec["selector"]["matchLabels"].items() <= labels.items(),
         "selector.matchLabels do not match the pod labels")
    need(pod_spec.get("hostNetwork") is True, "no hostNetwork")
    need(pod_spec.get("dnsPolicy") == "ClusterFirstWithHostNet", "host network without ClusterFirstWithHostNet")
    need(pod_spec.get("nodeSelector"), "no nodeSelector for gateway nodes")
    containers = pod_spec["containers"]
    need(len(containers) == 1, "not one container")
    c = containers[0]
    need(c.get("image"), "container without image")
    caps = c.get("securityContext", {}).get("capabilities", {})
    need(set(caps.get("add", [])) >= AF_XDP_CAPS, f"capabilities {caps.get('add')} lack AF_XDP's")
    need(caps.get("drop") == ["ALL"], "other capabilities are not dropped")
    need(c.get("securityContext", {}).get("privileged") is not True, "privileged container")
    resources = c.get("resources", {})
    need(resources.get("requests") == resources.get("limits"),
         "requests differ from limits (not Guaranteed QoS)")
    need(re.fullmatch(r"\d+", str(resources.get("limits", {}).get("cpu", ""))),
         "cpu is not whole cores (the static CPU manager would not pin them)")
    hugepages = [k for k in resources.get("limits", {}) if k.startswith("hugepages-")]
    need(hugepages, "no hugepages resource")
    volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
    mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
    huge_volumes = [n for n, v in volumes.items()
                    if v.get("emptyDir", {}).get("medium", "").startswith("HugePages")]
    need(huge_volumes and huge_volumes[0] in mounts, "no HugePages emptyDir mounted")
    for name in mounts:
        need(name in volumes, f"mount {name} has no volume")

    config_volumes = [n for n, v in volumes.items()
                      if v.get("configMap", {}).get("name") == configmap["metadata"]["name"]]
    need(len(config_volumes) == 1, "the ConfigMap is not a volume")
    policy_dir = mounts.get(config_volumes[0], {}).get("mountPath") if config_volumes else None
    need(policy_dir and "subPath" not in mounts.get(config_volumes[0], {}),
         "the policy ConfigMap is not mounted as a directory (a subPath never updates)")
    args = c.get("args", [])
    command = c.get("command", []) + args
    need(command[:2] == ["/usr/bin/twinlane", "run"], f"not `twinlane run`: {command[:2]}")
    need("-c" in args, "no -c POLICY")
    policy_path = args[args.index("-c") + 1] if "-c" in args else ""
    need(policy_dir and os.path.dirname(policy_path) == policy_dir, f"{policy_path} not in {policy_dir}")
    key = os.path.basename(policy_path)
    need(key in configmap.get("data", {}), f"the ConfigMap has no key {key}")
    run_args = args[:args.index("--")] if "--" in args else args
    need("--watch-policy" in run_args, "not started with --watch-policy")

    annotations = pod["metadata"].get("annotations", {})
    need(annotations.get("prometheus.io/scrape") == "true", "no prometheus.io/scrape annotation")
    port = annotations.get("prometheus.io/port")
    need(any(str(p.get("containerPort")) == port for p in c.get("ports", [])),
         f"the annotated port {port} is not a container port")

    if problems:
        return report(problems)
    policy_text = configmap["data"][key]
    policy = yaml.safe_load(policy_text)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(policy_text)
        f.flush()
        checked = subprocess.run([twinlane, "check", "-c", f.name], capture_output=True,
                                 text=True, timeout=30)
    need(checked.returncode == 0, f"twinlane check: {checked.stdout}{checked.stderr}")
    metrics = policy.get("metrics", {})
    need(str(metrics.get("port", 9464)) == port, f"metrics.port {metrics.get('port')} != annotation {port}")
    need(not str(metrics.get("listen", "127.0.0.1")).startswith("127."),
         "metrics listen on loopback: Prometheus could not scrape the pod")
    socket = policy.get("control", {}).get("socket", "/run/twinlane/twinlane.sock")
    need(any(os.path.dirname(socket) == m["mountPath"] for m in mounts.values()),
         f"control socket {socket} is not on a mounted directory")
    probe = c.get("livenessProbe", {}).get("exec", {}).get("command", [])
    need(socket in probe, f"the liveness probe does not use {socket}")
    for p in policy.get("ports", []):
        if p["device"].startswith("net_af_xdp"):
            need(f"xdp_prog={XDP_OBJECT}" in p["device"], f"port {p['name']}: not {XDP_OBJECT}")

    helptext = subprocess.run([twinlane, "run", "--help"], capture_output=True, text=True,
                              timeout=30).stdout
    known = set(re.findall(r"(--[a-z][a-z-]*)", helptext)) | set(re.findall(r"(?<![-\w])(-[a-z]),", helptext))
    for arg in run_args[1:]:
        if arg.startswith("-") and arg not in known:
            problems.append(f"`twinlane run` has no option {arg}")
    return report(problems, f"{len(docs)} documents; the DaemonSet, its policy (twinlane check "
                            f"OK) and the Prometheus annotations agree")


def report(problems, ok=""):
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    if not problems:
        print(f"PASS: {ok}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
