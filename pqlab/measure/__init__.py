"""The measuring primitives: clocks and cycle counters (:mod:`~pqlab.measure.timing`,
:mod:`~pqlab.measure.cycles` with its TSC helper ``tsc.c``), the machine and its noise per round
(:mod:`~pqlab.measure.machine`, :mod:`~pqlab.measure.noise` with its reference loops ``reference_loops.c``),
standard background loads (:mod:`~pqlab.measure.load`), and the statistics of rounds, intervals and ratios
(:mod:`~pqlab.measure.stats`, :mod:`~pqlab.measure.ratio`).  Nothing here runs an algorithm: that is
:mod:`pqlab.runners`; the bench API that puts them together is :mod:`pqlab.benchmark`.
"""
