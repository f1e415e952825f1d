"""The tidy results store: a run's tables and metadata written atomically and checkpointed while it runs
(:mod:`~pqlab.store.recorder`), read back, converted from older schemas and compared
(:mod:`~pqlab.store.results`), and carried between machines as verified bundles (:mod:`~pqlab.store.bundle`,
:mod:`~pqlab.store.bundle_checks`).  It reads what a run stored, never the live registry of algorithms.
"""
