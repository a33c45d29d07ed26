"""Smoke tests of the benchmark harness (``benchmarks/run.py --quick``)."""
