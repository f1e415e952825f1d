"""liboqs as builds: compiled from a source tree into pqlab's cache (:mod:`~pqlab.liboqs.build`), loaded into
a process by the build asked for and refusing any other (:mod:`~pqlab.liboqs.loader`), and its algorithm names
per release resolved to what they mean (:mod:`~pqlab.liboqs.names`).  Above :mod:`pqlab.core` only.
"""
