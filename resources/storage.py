"""The storage resource: the storage root as Dagster configuration (the I/O itself is the domain's Store).

Credentials never pass through Dagster config: they come from the environment (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY`` or any source boto understands).
"""

import dagster as dg
from pydantic import Field, PrivateAttr

from agielo_dagster.domain.store import Store, default_max_upload_bytes, default_root


class ObjectStorage(dg.ConfigurableResource):
    """A local folder (default ``AGIELO_STORAGE`` or ./agielo_data) or s3://bucket/prefix."""

    root: str = Field(default_factory=default_root, description="Local folder or s3://bucket/prefix")
    endpoint_url: str | None = Field(
        default=None,
        description="S3-compatible endpoint (e.g. a local SeaweedFS); default AWS_ENDPOINT_URL or AWS itself",
    )
    max_upload_bytes: int = Field(
        default_factory=default_max_upload_bytes,
        gt=0,
        description="Larger uploads are rejected unread (rule log_size); default AGIELO_MAX_UPLOAD_BYTES or 256 MiB. "
        "A parquet upload may decode to 8 times it; the decoder process may use 8 times it (at least 64 MiB) of memory",
    )
    _store: Store | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """A run names its process as it starts (``agielo_dagster.runs``), so that a kill of it does not leave the run
        in progress for ever."""
        from agielo_dagster.runs import process_tags, steps_in_run_process

        if context.instance is not None and context.run is not None and steps_in_run_process():
            context.instance.add_run_tags(context.run.run_id, process_tags())

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(root=self.root, endpoint_url=self.endpoint_url, max_upload_bytes=self.max_upload_bytes)
        return self._store
