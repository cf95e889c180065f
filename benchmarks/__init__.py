"""Benchmark scripts (run each as ``python benchmarks/<name>.py``) and what they share with the tests: real
production servers (:mod:`.servers`), crafted input files and graded benchmarks."""
