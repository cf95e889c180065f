"""An IO manager that keeps asset outputs as parquet under ``<root>/warehouse/``.

``<root>/warehouse/<asset>/<partition>.parquet`` (``_all.parquet`` when unpartitioned),
written atomically through :class:`ObjectStorage`. Accepts pandas or polars frames;
loads pandas (only the columns an input asks for).
"""

import io

import dagster as dg
import pandas as pd

from .storage import ObjectStorage


def frame_to_parquet(df) -> bytes:
    """Deterministic parquet bytes of a pandas or polars frame (no index, zstd)."""
    if not isinstance(df, pd.DataFrame):
        df = df.to_pandas()
    buffer = io.BytesIO()
    df.to_parquet(buffer, index=False, compression="zstd")
    return buffer.getvalue()


def parquet_to_frame(data: bytes, columns: list[str] | None = None) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(data), columns=columns)


def warehouse_path(asset_name: str, partition: str | None) -> str:
    return f"warehouse/{asset_name}/{partition or '_all'}.parquet"


class WarehouseIOManager(dg.ConfigurableIOManager):
    """Parquet files in the warehouse folder of the object storage."""

    storage: dg.ResourceDependency[ObjectStorage]

    def _path(self, context: dg.OutputContext | dg.InputContext) -> str:
        name = "/".join(context.asset_key.path)
        return warehouse_path(name, context.asset_partition_key if context.has_asset_partitions else None)

    def handle_output(self, context: dg.OutputContext, obj) -> None:
        path = self._path(context)
        self.storage.write_bytes(path, frame_to_parquet(obj))
        context.add_output_metadata({"path": dg.MetadataValue.path(self.storage.uri(path)), "rows": len(obj)})

    def load_input(self, context: dg.InputContext) -> pd.DataFrame:
        """The stored frame; an input declaring ``metadata={"columns": [...]}`` loads only those."""
        columns = (context.definition_metadata or {}).get("columns")
        return parquet_to_frame(self.storage.read_bytes(self._path(context)), columns=columns)
