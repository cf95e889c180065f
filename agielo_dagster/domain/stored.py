"""A stored output of the warehouse IO manager, read lazily: what every asset's input loads as. Nothing is read until
asked (the footer's inputs digest alone, some columns, or a stream), so a step reads only what it uses."""

from dataclasses import dataclass

import pyarrow as pa

from .layout import warehouse_path
from .lineage import DIGEST_KEY
from .store import Store

DICTIONARY_COLUMNS = ("test_case_id", "agent_id", "source_path", "source_version")


@dataclass(frozen=True)
class Stored:
    """One stored output (``exists`` is False once it is withdrawn: no accepted upload left)."""

    store: Store
    path: str

    @classmethod
    def of(cls, store: Store, asset: str, partition: str | None = None) -> "Stored":
        return cls(store, warehouse_path(asset, partition))

    @property
    def exists(self) -> bool:
        return self.store.exists(self.path)

    @property
    def digest(self) -> str:
        """The inputs digest the output recorded, from its parquet footer only ("" when missing or unrecorded)."""
        return (self.store.parquet_metadata(self.path) or {}).get(DIGEST_KEY, "")

    @property
    def schema(self) -> pa.Schema:
        """Its columns and key-value metadata, from the footer only."""
        return self.store.read_schema(self.path)

    def _ids(self) -> list[str]:
        return [c for c in DICTIONARY_COLUMNS if c in self.schema.names]

    def read(self, columns: list[str] | None = None) -> pa.Table:
        """The table (its footer's metadata kept), ids dictionary-encoded."""
        return self.store.read_table(self.path, columns=columns, read_dictionary=self._ids())

    def parts(self, columns: list[str] | None = None, where: dict | None = None):
        """:meth:`read` a row group at a time (a generator); ``where={column: value}`` keeps the rows where every
        named string column equals its value, skipping the row groups whose statistics exclude one."""
        return self.store.read_parts(self.path, columns=columns, read_dictionary=self._ids(), where=where)

    def source(self):
        """What a parquet reader should open to stream the file itself."""
        return self.store.parquet_source(self.path)
