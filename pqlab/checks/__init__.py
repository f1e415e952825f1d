"""What pqlab checks about the implementations it times, outside every timed region: known answers and invalid
inputs per (implementation, build, algorithm) (:mod:`~pqlab.checks.vectors`,
:mod:`~pqlab.checks.conformance`), agreement between implementations (:mod:`~pqlab.checks.crosscheck`,
:mod:`~pqlab.checks.interop`), timing-leakage screens and valgrind taint (:mod:`~pqlab.checks.leakage`,
:mod:`~pqlab.checks.taint` with ``taint_harness.c``), and our runs beside the studies' published ratios
(:mod:`~pqlab.checks.published`).
"""
