"""Checks for the rendered kustomizations that a schema cannot make: the
ServiceMonitor (a CRD, which kubernetes-validate has no schema for) selects the
Service and names a port it has, the workload keeps the restricted security
settings, serves TLS and mTLS from a mounted Secret with probes that can reach it
(startup and readiness on SERVING, liveness on `--live`, so a long initial list neither
restarts the pod nor routes to it), the PodDisruptionBudget lets a node drain, the
NetworkPolicy admits only the gRPC and metrics ports and lets out only to the API server,
cluster DNS and an OTLP collector, the ServiceMonitor lands in its Service's namespace,
and a PREEMPTD_POLICY file is mounted from a ConfigMap holding it.
Usage: python deploy/check.py RENDERED.yaml..."""

import sys

import yaml


def fail(path, message):
    print(f"{path}: {message}", file=sys.stderr)
    sys.exit(1)


def mounted_from_secret(pod, container, file):
    """Whether `file` lies in a volume mounted read-only from a Secret."""
    secrets = {v["name"] for v in pod.get("volumes", []) if "secret" in v}
    for m in container.get("volumeMounts", []):
        if m["name"] in secrets and m.get("readOnly") and file.startswith(m["mountPath"].rstrip("/") + "/"):
            if m.get("subPath"):
                return False  # subPath mounts never see a rotated Secret
            return True
    return False


def check_tls(path, pod, container, env):
    """TLS from a mounted Secret, mTLS on, and the probes' client settings."""
    name = container["name"]
    for var in ("PREEMPTD_TLS_CERT", "PREEMPTD_TLS_KEY", "PREEMPTD_TLS_CLIENT_CA"):
        file = env.get(var)
        if not file:
            fail(path, f"container {name}: {var} must be set (TLS and mTLS on)")
        if not mounted_from_secret(pod, container, file):
            fail(path, f"container {name}: {var}={file} is not in a read-only Secret volume")
    for var in ("PREEMPTD_HEALTH_TLS_CA", "PREEMPTD_HEALTH_TLS_CERT", "PREEMPTD_HEALTH_TLS_KEY"):
        if not env.get(var):
            fail(path, f"container {name}: {var} must be set for the probes to reach a TLS server")


def check_network_policy(path, policy):
    """Ingress only to the gRPC and metrics ports, every rule naming its ports."""
    allowed = {"grpc", "metrics", 50051, 9464}
    if "Ingress" not in policy["spec"].get("policyTypes", []):
        fail(path, "NetworkPolicy must restrict ingress")
    for rule in policy["spec"].get("ingress", []):
        ports = rule.get("ports")
        if not ports:
            fail(path, "NetworkPolicy ingress rule without ports opens every port")
        for p in ports:
            if p.get("port") not in allowed:
                fail(path, f"NetworkPolicy ingress port {p.get('port')!r} is not grpc or metrics")


def check_egress(path, policy):
    """Egress only to named peers: the API server (ipBlock), DNS, an OTLP collector."""
    if "Egress" not in policy["spec"].get("policyTypes", []):
        fail(path, "NetworkPolicy must restrict egress")
    by_port = {}
    for rule in policy["spec"].get("egress", []):
        peers = rule.get("to")
        ports = rule.get("ports")
        if not peers:
            fail(path, "NetworkPolicy egress rule without `to:` lets out to any host")
        if not ports:
            fail(path, "NetworkPolicy egress rule without ports opens every port")
        for peer in peers:
            block = peer.get("ipBlock", {}).get("cidr")
            if block in ("0.0.0.0/0", "::/0"):
                fail(path, f"NetworkPolicy egress to {block} lets out to any host")
            if "ipBlock" not in peer and not any(peer.get(k) for k in ("namespaceSelector", "podSelector")):
                fail(path, f"NetworkPolicy egress peer {peer} selects every pod")
        for p in ports:
            by_port.setdefault(p.get("port"), []).extend(peers)
    wanted = {443, 6443, 53, 4317}
    if set(by_port) != wanted:
        fail(path, f"NetworkPolicy egress ports {sorted(by_port, key=str)}, want {sorted(wanted)}")
    for port in (443, 6443):
        if not all("ipBlock" in peer for peer in by_port[port]):
            fail(path, f"NetworkPolicy egress on {port} must go to the API server's ipBlock only")
    for peer in by_port[53]:
        namespace = peer.get("namespaceSelector", {}).get("matchLabels", {})
        pods = peer.get("podSelector", {}).get("matchLabels", {})
        if namespace.get("kubernetes.io/metadata.name") != "kube-system" or pods.get("k8s-app") != "kube-dns":
            fail(path, f"NetworkPolicy DNS egress must go to kube-dns pods in kube-system, not {peer}")
    for peer in by_port[4317]:
        namespace = peer.get("namespaceSelector", {}).get("matchLabels")
        pods = peer.get("podSelector", {}).get("matchLabels")
        if not namespace or not pods:
            fail(path, f"NetworkPolicy OTLP egress must name the collector's namespace and pods, not {peer}")


def check_probes(path, container):
    """Startup and readiness wait for SERVING; liveness only for an answer (`--live`)."""
    name = container["name"]
    commands = {}
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        # With TLS on, the kubelet's own gRPC probe cannot connect: the binary's
        # `preemptd health` (the same protocol) runs in the container instead.
        command = container.get(probe, {}).get("exec", {}).get("command", [])
        if command[:2] != ["/preemptd", "health"]:
            fail(path, f"container {name}: {probe} must run `/preemptd health`")
        commands[probe] = command
    if "--live" not in commands["livenessProbe"]:
        fail(path, f"container {name}: livenessProbe must run `preemptd health --live` (alive while NOT_SERVING)")
    for probe in ("startupProbe", "readinessProbe"):
        if "--live" in commands[probe]:
            fail(path, f"container {name}: {probe} must wait for SERVING (no --live)")
    startup = container["startupProbe"]
    allowed = startup.get("periodSeconds", 10) * startup.get("failureThreshold", 3)
    if allowed < 600:
        fail(path, f"container {name}: startupProbe allows {allowed}s; a large initial list needs at least 600s")


def check_pdb(path, budget, replicas):
    """The budget must let a drain evict a pod (a restart relists: nothing is lost)."""
    spec = budget["spec"]
    if "maxUnavailable" in spec:
        value = spec["maxUnavailable"]
        if value in (0, "0", "0%"):
            fail(path, "PodDisruptionBudget maxUnavailable 0 blocks every node drain")
    if "minAvailable" in spec:
        value = spec["minAvailable"]
        if value == "100%" or (isinstance(value, int) and value >= replicas):
            fail(path, f"PodDisruptionBudget minAvailable {value} blocks every node drain")


def check_policy(path, pod, container, config_maps):
    """A container given PREEMPTD_POLICY reads it from a mounted ConfigMap that has it."""
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    policy = env.get("PREEMPTD_POLICY")
    if policy is None:
        return
    directory, _, key = policy.rpartition("/")
    mounts = [m for m in container.get("volumeMounts", []) if m["mountPath"] == directory]
    if not mounts:
        fail(path, f"PREEMPTD_POLICY {policy} is not in a mounted volume")
    volume = next((v for v in pod.get("volumes", []) if v["name"] == mounts[0]["name"]), {})
    name = volume.get("configMap", {}).get("name")
    held = next((m for m in config_maps if m["metadata"]["name"] == name), None)
    if held is None or key not in held.get("data", {}):
        fail(path, f"PREEMPTD_POLICY {policy}: no ConfigMap {name} with key {key}")


def check(path):
    with open(path, encoding="utf-8") as f:
        objects = [o for o in yaml.safe_load_all(f) if o]
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o["kind"], []).append(o)
    for kind in ("Deployment", "Service", "ServiceAccount", "PodDisruptionBudget", "NetworkPolicy"):
        if kind not in by_kind:
            fail(path, f"no {kind}")

    deployment = by_kind["Deployment"][0]
    pod = deployment["spec"]["template"]["spec"]
    if pod["securityContext"].get("runAsNonRoot") is not True:
        fail(path, "pod securityContext.runAsNonRoot must be true")
    for c in pod["containers"]:
        sc = c.get("securityContext", {})
        wanted = {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
        }
        for key, value in wanted.items():
            if sc.get(key) is not value:
                fail(path, f"container {c['name']}: securityContext.{key} must be {value}")
        if sc.get("capabilities", {}).get("drop") != ["ALL"]:
            fail(path, f"container {c['name']}: capabilities must drop ALL")
        if sc.get("seccompProfile", {}).get("type") != "RuntimeDefault":
            fail(path, f"container {c['name']}: seccompProfile must be RuntimeDefault")
        env = {e["name"]: e.get("value") for e in c.get("env", [])}
        check_tls(path, pod, c, env)
        check_probes(path, c)
        if not c.get("resources", {}).get("limits") or not c["resources"].get("requests"):
            fail(path, f"container {c['name']}: resource requests and limits are required")

        check_policy(path, pod, c, by_kind.get("ConfigMap", []))

    template_labels = deployment["spec"]["template"]["metadata"]["labels"]
    selectors = [
        ("Deployment", deployment["spec"]["selector"]["matchLabels"]),
        ("PodDisruptionBudget", by_kind["PodDisruptionBudget"][0]["spec"]["selector"]["matchLabels"]),
        ("NetworkPolicy", by_kind["NetworkPolicy"][0]["spec"]["podSelector"]["matchLabels"]),
        ("Service", by_kind["Service"][0]["spec"]["selector"]),
    ]
    for kind, selector in selectors:
        if not selector or any(template_labels.get(k) != v for k, v in selector.items()):
            fail(path, f"{kind} selector {selector} does not select the pods {template_labels}")

    service = by_kind["Service"][0]
    port_names = {p["name"] for p in service["spec"]["ports"]}
    check_network_policy(path, by_kind["NetworkPolicy"][0])
    check_egress(path, by_kind["NetworkPolicy"][0])
    check_pdb(path, by_kind["PodDisruptionBudget"][0], deployment["spec"].get("replicas", 1))
    for monitor in by_kind.get("ServiceMonitor", []):
        spec = monitor.get("spec", {})
        namespace = service["metadata"].get("namespace")
        if monitor["metadata"].get("namespace") != namespace:
            fail(path, f"ServiceMonitor namespace {monitor['metadata'].get('namespace')!r} is not the Service's {namespace!r}")
        labels = service["metadata"].get("labels", {})
        wanted = spec.get("selector", {}).get("matchLabels", {})
        if not wanted or any(labels.get(k) != v for k, v in wanted.items()):
            fail(path, f"ServiceMonitor selector {wanted} does not select the Service {labels}")
        endpoints = spec.get("endpoints") or fail(path, "ServiceMonitor has no endpoints")
        for e in endpoints:
            if e.get("port") not in port_names:
                fail(path, f"ServiceMonitor port {e.get('port')!r} is not a Service port {port_names}")
            if e.get("path", "/metrics") != "/metrics":
                fail(path, "ServiceMonitor path must be /metrics")
    kinds = ", ".join(sorted(f"{k} x{len(v)}" for k, v in by_kind.items()))
    print(f"{path}: ok ({kinds})")


for rendered in sys.argv[1:]:
    check(rendered)
