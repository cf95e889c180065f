"""The Dagster code location: assembles assets, checks, jobs, sensors, schedule and resources."""

import importlib
import os
import pkgutil
import warnings
from pathlib import Path

import dagster as dg

from . import allocator, threads  # noqa: F401 - first of the package: thread environment and allocator before numpy loads

# isort: split
from . import assets as asset_modules
from .assets.sources import SOURCES
from .domain.lineage import code_version
from .jobs import JOBS
from .resources.storage import ObjectStorage
from .resources.warehouse import WarehouseIOManager
from .schedules import nightly_rerate
from .sensors import benchmarks_sensor, judgments_sensor

# found, not listed: every asset and asset check of the assets package (a new module there is picked up)
ASSETS = dg.load_assets_from_package_module(asset_modules)
ASSET_CHECKS = dg.load_asset_checks_from_package_module(asset_modules)
MODULE_OF = {
    str(Path(module.__file__).resolve()): module.__name__
    for info in pkgutil.iter_modules(asset_modules.__path__)
    for module in [importlib.import_module(f"{asset_modules.__name__}.{info.name}")]
}


def versioned(spec: dg.AssetSpec) -> dg.AssetSpec:
    """The spec with the code version of what its asset runs: its module, the modules that imports, and the IO manager
    that writes it (``domain/lineage.py``); its module is the one its code reference names."""
    if spec.key in SOURCES:
        return spec
    (reference,) = spec.metadata["dagster/code_references"].code_references
    module = MODULE_OF[str(Path(reference.file_path).resolve())]
    return spec.replace_attributes(code_version=code_version(module, "agielo_dagster.resources.warehouse"))


def executor_from_environment() -> dg.ExecutorDefinition:
    """Where the steps of a run execute: in the run's own process (default), or on Celery workers.

    ``AGIELO_EXECUTOR=celery`` sends each step to the Celery workers listening on the broker (and
    result backend) ``AGIELO_CELERY_BROKER``, e.g. ``redis://redis:6379/0``; dagster-celery is only
    imported then (``pip install agielo-dagster[deploy]``).
    """
    kind = os.environ.get("AGIELO_EXECUTOR", "in_process").strip() or "in_process"
    if kind == "in_process":
        return dg.in_process_executor
    if kind != "celery":
        raise ValueError(f"AGIELO_EXECUTOR={kind!r}: expected 'in_process' or 'celery'")
    if not os.environ.get("AGIELO_CELERY_BROKER"):
        raise ValueError("AGIELO_EXECUTOR=celery needs AGIELO_CELERY_BROKER, e.g. redis://127.0.0.1:6379/0")
    from dagster_celery import celery_executor

    broker = {"env": "AGIELO_CELERY_BROKER"}
    return celery_executor.configured({"broker": broker, "backend": broker}, name="celery")


def build_definitions(storage: ObjectStorage | None = None, executor: dg.ExecutorDefinition | None = None) -> dg.Definitions:
    """The definitions over a storage root (``AGIELO_STORAGE`` or ``./agielo_data`` by default); the executor is
    ``AGIELO_EXECUTOR``'s unless given (``agielo run`` runs every step in its own process)."""
    storage = storage or ObjectStorage()
    with warnings.catch_warnings():
        # code references are the one beta API used on purpose: they link each asset to its source in the UI
        warnings.simplefilter("ignore", dg.BetaWarning)
        assets = dg.map_asset_specs(versioned, dg.with_source_code_references(ASSETS))
    return dg.Definitions(
        assets=assets,
        asset_checks=ASSET_CHECKS,
        jobs=JOBS,
        sensors=[benchmarks_sensor, judgments_sensor],
        schedules=[nightly_rerate],
        resources={"storage": storage, "warehouse_io_manager": WarehouseIOManager(storage=storage)},
        executor=executor or executor_from_environment(),
    )


defs = build_definitions()
