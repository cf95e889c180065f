"""Domain: the input contract, the storage layout, the upload ledger, lineage, figures and reports (no Dagster)."""
