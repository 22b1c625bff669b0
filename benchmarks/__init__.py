"""Benchmarks: `make bench`. Each prints its figure and a ratio against a baseline measured in the same run."""
