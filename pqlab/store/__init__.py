"""The tidy results store: a run's tables and metadata written atomically and checkpointed while it runs
(:mod:`~pqlab.store.recorder`), read back, converted from older schemas and compared
(:mod:`~pqlab.store.results`), and carried between machines as verified bundles (:mod:`~pqlab.store.bundle`
merges them, :mod:`~pqlab.store.bundle_pack` makes them, :mod:`~pqlab.store.bundle_read` reads them,
:mod:`~pqlab.store.bundle_checks` checks them; :mod:`~pqlab.store.machines` finds every machine's runs in the
store).  It reads what a run stored, never the live registry of algorithms.
"""
