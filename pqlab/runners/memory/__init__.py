"""Peak memory of one operation: native heap and stack (valgrind massif), Python heap (tracemalloc),
maximum resident set size (coarse).

- :mod:`pqlab.runners.memory.driver`: plans and runs worker processes, checks their outputs, writes a run
  (``measure_memory``); the method is described there.
- :mod:`pqlab.runners.memory.method`: the method's constants (markers, massif options, the worker runs).
- :mod:`pqlab.runners.memory.processes`: one worker run, as a process of its own or forked by a worker server
  under valgrind, and the check of its output.
- :mod:`pqlab.runners.memory.rows`: the schema rows of a measured thing, from its worker runs.
- :mod:`pqlab.runners.memory.worker`: one operation per process (``python -m pqlab.runners.memory.worker``),
  standard library and pqlab's adapters only.
- :mod:`pqlab.runners.memory.massif`: the massif output parser.
- :mod:`pqlab.runners.memory.cache`: worker runs stored under a key of everything that decides them, and
  reused.
"""
