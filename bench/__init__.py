"""Evidentia benchmarks (issue 7): ``make bench`` or ``python -m bench``.

Each module measures one thing against a baseline taken in the same run and returns a
result dict (``figures``, ``targets``, ``details``); ``bench.run`` prints the table and
writes ``bench/results.json``. Benchmarks print; they never assert timings.
"""
