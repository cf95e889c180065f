"""No default secrets, no open control plane: deploy/docker-compose.yaml (+ docker-compose.proxy.yaml, deploy/Caddyfile)
and deploy/helm/values.yaml.

docker compose and Kubernetes do not run here: these are parse-level checks of the files as written. Each check is
also run on the settings the issue found (``change-me`` keys, ``3000:3000`` on every interface, ``postgresqlPassword:
change-me``) to show that it catches them.
"""

from __future__ import annotations

import re

import pytest
import yaml

from ..devserver import REPO

DEPLOY = REPO / "deploy"
# environment variables and options that carry a secret (AWS_ACCESS_KEY_ID too: it names the key pair)
SECRET_NAME = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|_KEY$|_KEY_ID$|API_KEY|AUTH|HASH|CREDENTIAL", re.I)
SECRET_OPTION = re.compile(r"^--?[a-z-]*(pass|secret|token|key)[a-z-]*$", re.I)
REQUIRED = re.compile(r"^\$\{(?P<var>[A-Za-z_][A-Za-z0-9_]*):\?[^}]+\}$")  # ${VAR:?message}: no value, no start
INTERPOLATION = re.compile(r"\$\{(?P<var>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}")
URL_USERINFO = re.compile(r"[a-z][a-z0-9+.-]*://(?P<userinfo>[^/@\s]*)@", re.I)
LOOPBACK = {"127.0.0.1", "::1", "localhost"}
# helm values: keys that hold a secret's value (names of secrets, like existingSecret or secretName, are fine)
HELM_SECRET_KEY = re.compile(r"password|passwd|token|secretkey|secret_access|apikey|api_key|cookieSecret|clientSecret", re.I)
AUTH_ANNOTATIONS = ("nginx.ingress.kubernetes.io/auth-type", "nginx.ingress.kubernetes.io/auth-url")


def load(path: str) -> dict:
    return yaml.safe_load((DEPLOY / path).read_text())


def merged_compose() -> dict:
    """docker-compose.yaml with docker-compose.proxy.yaml given after it (its services added, as compose merges)."""
    base, proxy = load("docker-compose.yaml"), load("docker-compose.proxy.yaml")
    assert not set(base["services"]) & set(proxy["services"])  # the proxy file only adds
    return {**base, "services": {**base["services"], **proxy["services"]}}


def scalars(tree, where: str = ""):
    """Every ``(path, key, previous list item, value)`` of a YAML tree's scalars."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from scalars(value, f"{where}.{key}" if where else str(key))
            if not isinstance(value, (dict, list)):
                yield f"{where}.{key}" if where else str(key), str(key), None, value
    elif isinstance(tree, list):
        previous = None
        for i, value in enumerate(tree):
            if isinstance(value, (dict, list)):
                yield from scalars(value, f"{where}[{i}]")
            else:
                yield f"{where}[{i}]", where.rsplit(".", 1)[-1], previous, value
            previous = value


def with_defaults(text: str, env: dict[str, str] | None = None) -> str:
    """Compose's interpolation with ``env`` (default: nothing set, as a deployment started as documented)."""
    env = env or {}

    def one(match: re.Match) -> str:
        var, op, arg = match["var"], match["op"] or "", match["arg"] or ""
        value = env.get(var)
        if op in (":-", "-"):
            return value if value or (op == "-" and value is not None) else arg
        if op in (":?", "?"):
            if not value and not (op == "?" and value is not None):
                raise KeyError(f"{var}: {arg}")
            return value
        return value or ""

    return INTERPOLATION.sub(one, text)


def compose_secret_findings(compose: dict) -> list[str]:
    findings = []
    for where, key, previous, value in scalars(compose):
        text = "" if value is None else str(value)
        if "environment" in where.split(".") and SECRET_NAME.search(key) and not REQUIRED.match(text):
            findings.append(f"{where}: a secret that is not a required variable (${{VAR:?…}}): {text!r}")
        if isinstance(previous, str) and SECRET_OPTION.match(previous) and not REQUIRED.match(text):
            findings.append(f"{where}: the value of {previous} is not a required variable: {text!r}")
        for match in INTERPOLATION.finditer(text):
            if SECRET_NAME.search(match["var"]) and (match["op"] or "").endswith("-"):
                findings.append(f"{where}: a default value for the secret {match['var']}")
        for match in URL_USERINFO.finditer(text):
            password = match["userinfo"].partition(":")[2]
            if password and not REQUIRED.match(password):
                findings.append(f"{where}: a URL with a literal password")
    return findings


def published(port) -> tuple[str, str]:
    """(host address, host port) of one ``ports`` entry, interpolated with nothing set."""
    if isinstance(port, dict):
        return with_defaults(str(port.get("host_ip", "0.0.0.0"))), with_defaults(str(port.get("published", "")))
    text = with_defaults(str(port)).split("/")[0]
    if text.startswith("["):  # [::1]:3000:3000
        host, _, rest = text[1:].partition("]:")
        return host, rest.split(":")[0]
    parts = text.split(":")
    return (parts[0], parts[1]) if len(parts) == 3 else ("0.0.0.0", parts[0])


def caddy_sites(text: str) -> dict[str, str]:
    """The site blocks of a Caddyfile: address → body (the global options block, with no address, is left out).

    Placeholders (``{$VAR}``) are balanced braces, so counting braces finds the blocks.
    """
    sites, depth, address, body = {}, 0, None, []
    for line in text.splitlines():
        stripped = line.split("#", 1)[0].strip()
        if depth == 0 and stripped.endswith("{"):
            address, body = stripped[:-1].strip(), []
        elif depth > 0:
            body.append(stripped)
        depth += stripped.count("{") - stripped.count("}")
        if depth == 0 and address is not None:
            if address:
                sites[address] = "\n".join(body)
            address = None
    return sites


def proxy_findings(service: dict, caddyfile: str, webservers: set[str]) -> list[str]:
    """The proxy may publish beyond the host only if every site authenticates and proxies to a webserver."""
    findings, sites = [], caddy_sites(caddyfile)
    if not sites:
        findings.append("the proxy's Caddyfile has no site")
    upstreams = set()
    for address, body in sites.items():
        if not re.search(r"^(basic_?auth|forward_auth)\b", body, re.M):
            findings.append(f"Caddyfile site {address}: no authentication (basic_auth or forward_auth)")
        for match in re.finditer(r"^\s*(\{\$[A-Z_]+\})\s+(\{\$[A-Z_]+\}|\S+)\s*$", body, re.M):
            if not match[2].startswith("{$"):
                findings.append(f"Caddyfile site {address}: a literal password hash")
        upstreams |= {m.split(":")[0] for m in re.findall(r"reverse_proxy\s+(\S+)", body)}
        if re.search(r"^\s*\S+\s+\$2[aby]\$", body, re.M):
            findings.append(f"Caddyfile site {address}: a literal password hash")
    if not upstreams <= webservers:
        findings.append(f"the proxy forwards to {sorted(upstreams - webservers)}, which are not webservers")
    for name in service.get("environment") or {}:
        if f"{{${name}}}" not in caddyfile:
            findings.append(f"the proxy's variable {name} is not used by the Caddyfile")
    return findings


def compose_exposure_findings(compose: dict, caddyfile: str) -> list[str]:
    findings = []
    services = compose["services"]
    webservers = {n for n, s in services.items() if "dagster-webserver" in " ".join(map(str, s.get("command") or []))}
    for name, service in services.items():
        if service.get("network_mode") == "host":
            findings.append(f"{name}: network_mode host publishes every port on every interface")
        is_proxy = any("Caddyfile" in str(v) for v in service.get("volumes") or [])
        for port in service.get("ports") or []:
            host, _ = published(port)
            if host in LOOPBACK:
                continue
            if is_proxy:
                findings += proxy_findings(service, caddyfile, webservers)
            else:
                kind = "the webserver (no login: launch, delete, wipe)" if name in webservers else "a service"
                findings.append(f"{name}: {kind} is published on {host or 'every interface'} without the proxy: {port!r}")
    return findings


def helm_findings(values: dict) -> list[str]:
    findings = []
    for where, key, _, value in scalars(values):
        if HELM_SECRET_KEY.search(key) and not key.endswith(("SecretName", "Secret", "secretName")) and value not in ("", None):
            if not (isinstance(value, bool) or key == "generatePostgresqlPasswordSecret"):
                findings.append(f"{where}: a literal secret {value!r}")
    for where, _, _, value in scalars(values):
        if where.endswith(".name") and ".env[" in where and SECRET_NAME.search(str(value)):
            findings.append(f"{where}: the secret {value} as a plain env value; use envSecrets")
    if values.get("generatePostgresqlPasswordSecret", True):
        findings.append("generatePostgresqlPasswordSecret is not false: the chart would make the secret from a value")
    secret = (values.get("global") or {}).get("postgresqlSecretName")
    if not secret:
        findings.append("global.postgresqlSecretName names no existing secret")
    postgresql = values.get("postgresql") or {}
    if postgresql.get("enabled") and (
        postgresql.get("postgresqlPassword", "x") != "" or postgresql.get("existingSecret") != secret
    ):
        findings.append("postgresql: the chart's database must take its password from the same existing secret")
    webserver = values.get("dagsterWebserver") or {}
    if (webserver.get("service") or {}).get("type", "ClusterIP") != "ClusterIP":
        findings.append("dagsterWebserver.service.type publishes the webserver outside the cluster")
    if not webserver.get("enableReadOnly"):
        findings.append("dagsterWebserver.enableReadOnly is off: no read-only webserver")
    ingress = values.get("ingress") or {}
    if ingress and not any(a in (ingress.get("annotations") or {}) for a in AUTH_ANNOTATIONS):
        findings.append("ingress: no authentication annotation (enabling it would open the control plane)")
    return findings


# -- the deployment as committed -----------------------------------------------------------------------------------


def test_compose_holds_no_literal_secret():
    assert compose_secret_findings(load("docker-compose.yaml")) == []
    assert compose_secret_findings(load("docker-compose.proxy.yaml")) == []


def test_compose_publishes_no_webserver_beyond_the_host_without_the_proxy():
    caddyfile = (DEPLOY / "Caddyfile").read_text()
    base = load("docker-compose.yaml")
    assert compose_exposure_findings(base, caddyfile) == []
    assert all(host in LOOPBACK for s in base["services"].values() for host, _ in map(published, s.get("ports") or []))
    compose = merged_compose()
    assert compose_exposure_findings(compose, caddyfile) == []
    services = compose["services"]
    assert [published(p) for p in services["webserver"]["ports"]] == [("127.0.0.1", "3000")]
    assert [published(p) for p in services["webserver-read-only"]["ports"]] == [("127.0.0.1", "3001")]
    assert "--read-only" in services["webserver-read-only"]["command"]
    assert "--read-only" not in services["webserver"]["command"]
    assert "proxy" not in base["services"]  # started only when its file is given
    sites = caddy_sites((DEPLOY / "Caddyfile").read_text())
    assert {s: re.findall(r"reverse_proxy\s+(\S+)", b) for s, b in sites.items()} == {
        "{$AGIELO_ADMIN_HOST}": ["webserver:3000"],
        "{$AGIELO_VIEWER_HOST}": ["webserver-read-only:3000"],
    }


def test_compose_refuses_to_start_without_any_secret_and_env_example_lists_them_all():
    """Compose checks the required variables of every file it is given, profiles or not: the proxy's are in its file."""
    text, proxy = (DEPLOY / "docker-compose.yaml").read_text(), (DEPLOY / "docker-compose.proxy.yaml").read_text()
    core = {m["var"] for m in INTERPOLATION.finditer(text) if m["op"] == ":?"}
    assert {"AGIELO_POSTGRES_PASSWORD", "AGIELO_REDIS_PASSWORD", "AGIELO_S3_SECRET_ACCESS_KEY"} <= core
    assert not {v for v in core if v.startswith(("AGIELO_ADMIN_", "AGIELO_VIEWER_"))}  # a plain start never asks for them
    proxy_vars = {m["var"] for m in INTERPOLATION.finditer(proxy) if m["op"] == ":?"}
    assert {"AGIELO_ADMIN_PASSWORD_HASH", "AGIELO_VIEWER_PASSWORD_HASH"} <= proxy_vars
    required = core | proxy_vars
    full = {v: "x" for v in required}
    with_defaults(text + proxy, full)  # everything set: interpolates
    for var in sorted(core):
        with pytest.raises(KeyError, match=var):
            with_defaults(text, {k: v for k, v in full.items() if k != var})
    for var in sorted(proxy_vars):
        with pytest.raises(KeyError, match=var):
            with_defaults(proxy, {k: v for k, v in full.items() if k != var})
    example = (DEPLOY / "env.example").read_text()
    listed = set(re.findall(r"^#?([A-Z][A-Z0-9_]+)=", example, re.M))
    assert required <= listed, required - listed
    assert not re.findall(r"^[A-Z_]+=\S", example, re.M)  # the example holds no value to copy
    assert ".env" in (DEPLOY / ".gitignore").read_text().split()


def test_helm_values_hold_no_literal_secret_and_open_nothing():
    values = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
    assert helm_findings(values) == []
    assert values["ingress"]["enabled"] is False  # closed unless the operator turns it on, with the auth above
    assert values["global"]["postgresqlSecretName"] == values["postgresql"]["existingSecret"] == "agielo-postgresql"


# -- the checks catch what the issue found --------------------------------------------------------------------------

OLD_COMPOSE = """
services:
  s3:
    environment:
      AWS_ACCESS_KEY_ID: agielo-key
      AWS_SECRET_ACCESS_KEY: change-me-agielo-secret
    ports: ["8333:8333"]
  postgres:
    environment:
      POSTGRES_PASSWORD: dagster
  code:
    environment:
      DAGSTER_POSTGRES_PASSWORD: "${PG_PASSWORD:-dagster}"
      AGIELO_CELERY_BROKER: redis://:hunter2@redis:6379/0
  redis:
    command: ["redis-server", "--requirepass", "hunter2"]
  webserver:
    command: ["dagster-webserver", "-h", "0.0.0.0", "-p", "3000"]
    ports: ["3000:3000", "0.0.0.0:3002:3000", "${BIND:-0.0.0.0}:3003:3000", {target: 3000, published: 3004}]
  other:
    network_mode: host
"""


def test_the_checks_find_each_literal_secret_and_open_port_of_the_old_files():
    compose = yaml.safe_load(OLD_COMPOSE)
    secrets = compose_secret_findings(compose)
    for needle in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "POSTGRES_PASSWORD",
        "default value for the secret PG_PASSWORD",
        "URL with a literal password",
        "--requirepass",
    ):
        assert any(needle in f for f in secrets), (needle, secrets)
    exposure = compose_exposure_findings(compose, "")
    assert sum("webserver: the webserver" in f for f in exposure) == 4, exposure
    assert any(f.startswith("s3: a service") for f in exposure) and any("network_mode" in f for f in exposure)


def test_the_proxy_must_authenticate_every_site_it_publishes():
    compose = {
        "services": {
            "webserver": {"command": ["dagster-webserver"], "ports": ["127.0.0.1:3000:3000"]},
            "proxy": {"volumes": ["./Caddyfile:/etc/caddy/Caddyfile:ro"], "ports": ["443:443"]},
        }
    }
    good = "{$HOST} {\n\tbasic_auth {\n\t\t{$USER} {$HASH}\n\t}\n\treverse_proxy webserver:3000\n}\n"
    assert compose_exposure_findings(compose, good) == []
    open_site = "{$HOST} {\n\treverse_proxy webserver:3000\n}\n"
    assert any("no authentication" in f for f in compose_exposure_findings(compose, open_site))
    literal = good.replace("{$HASH}", "$2a$14$abcdefghijklmnopqrstuv")
    assert any("literal password hash" in f for f in compose_exposure_findings(compose, literal))
    elsewhere = good.replace("webserver:3000", "postgres:5432")
    assert any("not webservers" in f for f in compose_exposure_findings(compose, elsewhere))


def test_the_helm_check_finds_the_old_values():
    old = {
        "postgresql": {"enabled": True, "postgresqlPassword": "change-me"},
        "dagsterWebserver": {"service": {"type": "LoadBalancer"}},
        "ingress": {"enabled": True, "annotations": {}},
        "dagster-user-deployments": {"deployments": [{"env": [{"name": "AWS_SECRET_ACCESS_KEY", "value": "x"}]}]},
    }
    findings = "\n".join(helm_findings(old))
    for needle in (
        "postgresql.postgresqlPassword: a literal secret 'change-me'",
        "generatePostgresqlPasswordSecret",
        "global.postgresqlSecretName",
        "service.type",
        "enableReadOnly",
        "ingress: no authentication",
        "use envSecrets",
    ):
        assert needle in findings, (needle, findings)
