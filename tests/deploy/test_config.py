"""The deployment files parse, agree with each other, and are what Dagster itself accepts.

docker and Kubernetes are not available to the tests: the compose file and the Helm values are
checked by parsing; ``dagster.yaml`` is loaded by Dagster itself (its Postgres storage aside) and
``celery.yaml`` goes through dagster-celery's schema; the Celery executor is configured as the code location does it.
"""

import os
import subprocess
import sys

import pytest
import yaml

from ..devserver import REPO

DEPLOY = REPO / "deploy"
DAGSTER_SERVICES = ("code", "webserver", "webserver-read-only", "daemon", "worker")
LIMIT = {"key": "agielo/benchmark", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}


def load(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name).read_text())


def env_references(value) -> set[str]:
    """Every ``{env: NAME}`` in a Dagster config tree."""
    if isinstance(value, dict):
        if set(value) == {"env"} and isinstance(value["env"], str):
            return {value["env"]}
        return set().union(*(env_references(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(env_references(v) for v in value)) if value else set()
    return set()


@pytest.fixture
def compose_env() -> dict[str, dict[str, str]]:
    compose = load("docker-compose.yaml")
    return {
        name: {k: str(v) for k, v in (service.get("environment") or {}).items()} for name, service in compose["services"].items()
    }


def test_dagster_yaml_is_a_valid_instance_config(tmp_path, monkeypatch):
    """Dagster loads the instance (its run queue, launcher and monitoring) from the file as it is, the Postgres storage
    aside (no server here: tests/deploy/test_production*.py run it); the storage section names every variable."""
    import dagster as dg
    from dagster_postgres.utils import pg_url_from_config

    config = load("dagster.yaml")
    values = {"HOST": "db.internal", "PORT": "6543", "USER": "agielo", "PASSWORD": "p@ss word", "DB": "ratings"}
    postgres = {
        k: ({"env": v["env"]} if isinstance(v, dict) else v) for k, v in config["storage"]["postgres"]["postgres_db"].items()
    }
    resolved = {k: values[v["env"].removeprefix("DAGSTER_POSTGRES_")] if isinstance(v, dict) else v for k, v in postgres.items()}
    assert pg_url_from_config({"postgres_db": resolved}) == "postgresql+psycopg2://agielo:p%40ss%20word@db.internal:6543/ratings"

    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump({k: v for k, v in config.items() if k != "storage"}))
    with dg.DagsterInstance.from_config(str(home)) as instance:  # raises on anything Dagster's schema refuses
        coordinator = instance.run_coordinator
        assert type(coordinator).__name__ == "QueuedRunCoordinator"
        assert coordinator.inst_data.config_dict["tag_concurrency_limits"] == [LIMIT]
        assert coordinator.inst_data.config_dict["max_concurrent_runs"] >= 2
        assert type(instance.run_launcher).__name__ == "DefaultRunLauncher"


def test_every_dagster_service_gets_every_variable_the_configs_read(compose_env):
    needed = env_references(load("dagster.yaml")) | env_references(load("celery.yaml"))
    assert needed >= {f"DAGSTER_POSTGRES_{k}" for k in ("HOST", "PORT", "USER", "PASSWORD", "DB")}
    assert "AGIELO_CELERY_BROKER" in needed
    for service in DAGSTER_SERVICES:
        env = compose_env[service]
        assert needed <= set(env), (service, needed - set(env))
        assert env["DAGSTER_HOME"] == "/opt/dagster/dagster_home"
        assert env["AGIELO_EXECUTOR"] == "celery"
        # the broker's password is the redis service's (redis://:<password>@redis:6379/0)
        assert env["AGIELO_CELERY_BROKER"] == "redis://:" + compose_env["redis"]["REDISCLI_AUTH"] + "@redis:6379/0"
        assert env["AWS_ENDPOINT_URL"].startswith("http://s3:")


def test_compose_services_agree_with_each_other(compose_env):
    compose = load("docker-compose.yaml")
    services = compose["services"]
    assert {"postgres", "redis", "s3", *DAGSTER_SERVICES} <= set(services)
    postgres = compose_env["postgres"]
    for service in DAGSTER_SERVICES:
        env = compose_env[service]
        assert env["DAGSTER_POSTGRES_HOST"] == "postgres" and env["DAGSTER_POSTGRES_PORT"] == "5432"
        assert (env["DAGSTER_POSTGRES_USER"], env["DAGSTER_POSTGRES_PASSWORD"], env["DAGSTER_POSTGRES_DB"]) == (
            postgres["POSTGRES_USER"],
            postgres["POSTGRES_PASSWORD"],
            postgres["POSTGRES_DB"],
        )
        assert env["AWS_ACCESS_KEY_ID"] == compose_env["s3"]["AWS_ACCESS_KEY_ID"]
        assert env["AWS_SECRET_ACCESS_KEY"] == compose_env["s3"]["AWS_SECRET_ACCESS_KEY"]
        assert env["AGIELO_STORAGE"] == f"s3://{compose_env['s3']['S3_BUCKET']}"
        assert services[service]["build"]["dockerfile"] == "deploy/Dockerfile"
    # the workspace the webserver and the daemon load points at the code server's host and port
    workspace = load("workspace.yaml")["load_from"][0]["grpc_server"]
    code_command = services["code"]["command"]
    assert workspace["host"] == "code"
    assert str(workspace["port"]) == code_command[code_command.index("-p") + 1]
    for service in ("webserver", "webserver-read-only", "daemon"):
        assert "deploy/workspace.yaml" in services[service]["command"]
    redis = services["redis"]["command"]
    assert redis[redis.index("--requirepass") + 1] == compose_env["redis"]["REDISCLI_AUTH"]
    worker = services["worker"]["command"]
    assert worker[:3] == ["dagster-celery", "worker", "start"] and "deploy/celery.yaml" in worker
    assert services["worker"]["deploy"]["replicas"] >= 2
    # the Dockerfile installs the deploy extra and makes deploy/dagster.yaml the instance
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "'.[deploy]'" in dockerfile and "deploy/dagster.yaml" in dockerfile


def test_helm_values_match_the_instance():
    values = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
    coordinator = values["dagsterDaemon"]["runCoordinator"]
    assert coordinator["enabled"] and coordinator["type"] == "QueuedRunCoordinator"
    queued = coordinator["config"]["queuedRunCoordinator"]
    assert queued["tagConcurrencyLimits"] == load("dagster.yaml")["run_coordinator"]["config"]["tag_concurrency_limits"]
    assert queued["tagConcurrencyLimits"] == [LIMIT]
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    assert values["postgresql"]["enabled"]
    (deployment,) = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "agielo_dagster.definitions", "-a", "defs"]
    env = {e["name"]: e["value"] for e in deployment["env"]}
    assert env["AGIELO_STORAGE"].startswith("s3://")


def test_celery_yaml_is_the_executor_config_dagster_celery_reads(monkeypatch):
    from dagster_celery.cli import get_validated_config

    monkeypatch.setenv("AGIELO_CELERY_BROKER", "redis://127.0.0.1:6399/3")
    config = get_validated_config(str(DEPLOY / "celery.yaml"))
    assert config["broker"] == config["backend"] == "redis://127.0.0.1:6399/3"


def test_the_executor_comes_from_the_environment(monkeypatch, tmp_path):
    import dagster as dg
    from agielo_dagster.resources.storage import ObjectStorage

    from agielo_dagster.definitions import build_definitions

    storage = ObjectStorage(root=str(tmp_path))
    monkeypatch.delenv("AGIELO_EXECUTOR", raising=False)
    assert build_definitions(storage).resolve_job_def("rate_benchmarks").executor_def is dg.in_process_executor

    monkeypatch.setenv("AGIELO_EXECUTOR", "celery")
    monkeypatch.delenv("AGIELO_CELERY_BROKER", raising=False)
    with pytest.raises(ValueError, match="AGIELO_CELERY_BROKER"):
        build_definitions(storage)

    monkeypatch.setenv("AGIELO_CELERY_BROKER", "redis://127.0.0.1:6399/0")
    job = build_definitions(storage).resolve_job_def("rate_benchmarks")
    assert job.executor_def.name == "celery"
    # the executor's configuration takes the broker and the backend from the environment
    mapped = job.executor_def.apply_config_mapping({})
    assert mapped.success, mapped.errors
    assert mapped.value["config"]["broker"] == mapped.value["config"]["backend"] == "redis://127.0.0.1:6399/0"

    monkeypatch.setenv("AGIELO_EXECUTOR", "dask")
    with pytest.raises(ValueError, match="in_process' or 'celery"):
        build_definitions(storage)


def test_the_default_install_needs_no_dagster_celery():
    code = "import sys; import agielo_dagster.definitions; assert 'dagster_celery' not in sys.modules; print('ok')"
    env = {k: v for k, v in os.environ.items() if k not in ("AGIELO_EXECUTOR", "AGIELO_CELERY_BROKER")}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]
