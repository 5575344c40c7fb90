"""DCGM health -> quarantine: a small DaemonSet on the GPU pools (``gpu-dcgm-health``) sets DCGM's health watches on
the node's standalone host engine (the GPU operator's ``nvidia-dcgm``, on with ``dcgm.enabled``), runs
``dcgmi health --check --json`` every minute, and

- on an overall ``Failure`` leaves ``MARKER`` on the node: node-problem-detector's custom plugin monitor turns it into
  a condition every GPU pool's NodeHealthCheck remediates (components/k8s/selfheal.py), like a failed health gate;
  the marker stays until the reboot clears /run (a Failure that ages out of DCGM's sample window is not a repair);
- on ``Warning`` or ``Healthy`` changes no marker: the result goes to node exporter's textfile collector and a
  Warning only alerts (``alerts()``);
- when dcgmi cannot reach the host engine or prints no result (a restarted host engine forgets the watches: they are
  set again) changes no marker either: a monitoring outage must not drain a pool; it alerts.

Every DCGM fact comes from the digests: the image is the host engine's own (gpu-operator chart defaults ``dcgm.*``),
the address is the operator's node-local Service (assets/state-dcgm/0500_service.yaml), the flags, JSON keys and
result names/values are DCGM v4.2.3's (the ``dcgm`` pin: dcgmi/CommandLineParser.cpp, dcgmi/Health.cpp,
dcgmi/DcgmiOutput.*, dcgmlib/dcgm_structs.h).
"""

from __future__ import annotations

from typing import Any

from components.fleet import Cluster
from components.k8s import nvidia, rules, textfile, upstream
from components.k8s.model import Manifest, Obj, Rendered, config_map, obj
from components.k8s.scheduling import on_pools, tolerations

NAME = "gpu-dcgm-health"
DCGM_PIN = "dcgm"
SCRIPT_KEY = "dcgm-health.sh"
INTERVAL_S = 60  # dcgmi: "(*) watch requires 60 sec before first query" (the --set help, CommandLineParser.cpp)
WATCHES = "a"  # every watch dcgmi can set: PCIe, memory, InfoROM, thermal + power, NVLink, NVSwitch
# Under /run (cleared at boot, FHS 3.0 section 3.15), like the health gate's marker: the reboot lifts the condition.
MARKER_DIR = "/run/gpufleet/dcgm-health"
MARKER = f"{MARKER_DIR}/failed"
METRICS_FILE = f"{MARKER_DIR}/gpufleet_dcgm_health.prom"
PREFIX = "gpufleet_dcgm_health_"
METRICS = {
    "result": ("gauge", "Overall result of the last DCGM health check as DCGM numbers it (dcgmHealthWatchResults_t, "
                        "dcgm_structs.h); absent when the check got no result."),
    "check_success": ("gauge", "1 when the last check reached the host engine and read a result, else 0."),
    "last_check_timestamp_seconds": ("gauge", "Unix time of the last check."),
}
RESULTS = ("DCGM_HEALTH_RESULT_PASS", "DCGM_HEALTH_RESULT_WARN", "DCGM_HEALTH_RESULT_FAIL")


def _cpp(path: str) -> dict[str, Any]:
    return dict(upstream.digest(DCGM_PIN)["cpp"][path])


def results() -> dict[str, int]:
    """What ``dcgmi health --check`` prints for each result -> DCGM's value of that result."""
    names = _cpp("dcgmi/Health.cpp")["returns"]["HelperHealthToString"]
    values = _cpp("dcgmlib/dcgm_structs.h")["enums"]
    return {names[r]: values[r] for r in RESULTS}


def host_engine() -> str:
    """``<service>:<port>`` of the operator's node-local Service in front of the host engine, as the operator points
    the DCGM exporter at it (controllers/object_controls.go: DCGM_REMOTE_HOSTENGINE_INFO=nvidia-dcgm:5555)."""
    [service] = upstream.manifest("gpu-operator", "dcgm-service")["services"]
    [port] = service["ports"]
    return f"{service['name']}:{port['port']}"


def metric_names() -> list[str]:
    return [PREFIX + name for name in METRICS]


def script() -> str:
    """The watcher (POSIX sh; the DCGM image is Ubuntu with sed, tr and date, and no JSON tool). ``once``: one
    check, for tests and for a person (``kubectl exec``)."""
    overall = _cpp("dcgmi/Health.cpp")["defines"]["OVERALL_HEALTH_TAG"]
    fail = max(results().values())
    cases = "\n".join(f"    {name}) result={value} ;;" for name, value in results().items())

    def series(name: str, value: str) -> str:
        return textfile.printf_series(PREFIX + name, *METRICS[name], value)

    publish = textfile.replace_file(
        f'if [ -n "$result" ]; then printf "{series("result", "$result")}"; fi; '
        f'printf "{series("check_success", "$ok")}{series("last_check_timestamp_seconds", "$(date +%s)")}"',
        METRICS_FILE.replace(MARKER_DIR, "$MARKER_DIR"))
    # jsoncpp's styled output: {"body": {"<OVERALL_HEALTH_TAG>": {"value": "<result>"}, "GPU": {...}}}
    gap = "[[:space:]]*"
    value = f's/.*"{overall}"{gap}:{gap}{{{gap}"value"{gap}:{gap}"\\([^"]*\\)".*/\\1/p'
    # the systems that failed: leaf objects (no braces inside) whose value is the Failure name, e.g. "Memory system"
    # (Health::HandleOneEntity: outErrors[system] = health); GNU sed's \n splits them onto lines of their own
    failure = next(name for name, v in results().items() if v == fail)
    failed = (f's/"\\([^"]*\\)"{gap}:{gap}{{[^{{}}]*"value"{gap}:{gap}"{failure}"[^{{}}]*}}/\\n@\\1\\n/g')
    return f"""#!/bin/sh
# DCGM health watcher (components/k8s/dcgmhealth.py). Env: DCGM_HOST, MARKER_DIR, INTERVAL_SECONDS.
set_watches() {{ dcgmi health --host "$DCGM_HOST" --set {WATCHES}; }}
check() {{
  out=$(dcgmi health --host "$DCGM_HOST" --check --json 2>&1); rc=$?
  printf '%s\\n' "$out"
  health=""
  if [ "$rc" -eq 0 ]; then health=$(printf '%s' "$out" | tr -d '\\n' | sed -n '{value}'); fi
  result=""
  case "$health" in
{cases}
  esac
  if [ -z "$result" ]; then
    ok=0; echo "no DCGM health result (dcgmi exit $rc): setting the watches again"; set_watches
  else
    ok=1
  fi
  if [ "$result" = "{fail}" ]; then
    systems=$(printf '%s' "$out" | tr -d '\\n' | sed '{failed}' | sed -n 's/^@//p' | grep -vxF "{overall}" \\
      | paste -sd, -)
    echo "DCGM {failure}: $systems; $(date -u +%FT%TZ); see the {NAME} pod log" > "$MARKER_DIR/failed"
  fi
  {publish}
}}
set_watches
if [ "${{1:-}}" = once ]; then check; exit 0; fi
while :; do sleep "$INTERVAL_SECONDS"; check; done
"""


def daemonset(cluster: Cluster) -> Obj:
    labels = {"app": NAME}
    container = {
        "name": "dcgm-health", "image": nvidia.dcgm_image(),  # its dcgmi matches the engine
        "command": ["/bin/sh", f"/scripts/{SCRIPT_KEY}"],  # the image's ENTRYPOINT is nv-hostengine (Dockerfile)
        "env": [{"name": "DCGM_HOST", "value": host_engine()}, {"name": "MARKER_DIR", "value": MARKER_DIR},
                {"name": "INTERVAL_SECONDS", "value": str(INTERVAL_S)}],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "script", "mountPath": "/scripts", "readOnly": True},
                         {"name": "marker", "mountPath": MARKER_DIR}]}
    return obj("apps/v1", "DaemonSet", NAME, nvidia.NAMESPACE, labels, spec={
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {
            "priorityClassName": "system-node-critical",
            "affinity": on_pools(list(cluster.pools)), "tolerations": tolerations(cluster.cloud, cluster.pools),
            "containers": [container],
            "volumes": [{"name": "script", "configMap": {"name": NAME, "defaultMode": 0o755}},
                        {"name": "marker", "hostPath": {"path": MARKER_DIR, "type": "DirectoryOrCreate"}}]}}})


def watcher(cluster: Cluster) -> Rendered:
    """The watcher's script and DaemonSet, in the GPU operator's namespace (next to the host engine's Service)."""
    return Rendered(manifests=[config_map(NAME, nvidia.NAMESPACE, {SCRIPT_KEY: script()}),
                               Manifest(daemonset(cluster), after=("gpu-operator",))])


def alerts() -> list[rules.Alert]:
    """A Failure pages through GpuNodeQuarantined (the condition); these cover what does not quarantine."""
    warn = results()["Warning"]
    return [
        rules.Alert("DcgmHealthWarning", f"max by (instance) ({PREFIX}result == {warn})", "10m", "warning",
                    "DCGM health watches report Warning on {{ $labels.instance }} (PCIe replays, throttling, "
                    "pending page retirement, InfoROM ...): look today; no quarantine."),
        rules.Alert("DcgmHealthCheckFailing", f"max by (instance) ({PREFIX}check_success == 0) or "
                    f"time() - max by (instance) ({PREFIX}last_check_timestamp_seconds) > {10 * INTERVAL_S}",
                    "10m", "warning", "The DCGM health check on {{ $labels.instance }} gets no result (host engine "
                    "unreachable or not running): DCGM faults there are not detected, nothing is quarantined."),
        rules.Alert("DcgmHealthWatcherDown", f'kube_daemonset_status_number_unavailable{{daemonset="{NAME}"}} > 0',
                    "10m", "warning", "The DCGM health watcher is not running on some GPU nodes."),
    ]
