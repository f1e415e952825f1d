"""The language every layer shares, importing nothing of pqlab above it.

Errors and their one-line messages (:mod:`~pqlab.core.errors`), the vocabularies of families, backends and
topics (:mod:`~pqlab.core.vocabulary`), flags (:mod:`~pqlab.core.flags`), the results' columns with their
kinds and units (:mod:`~pqlab.core.schema`, the one unit table), numbers, units and text formatted per output
language (:mod:`~pqlab.core.formatting`: numbers in :mod:`~pqlab.core.quantities`, escaping in
:mod:`~pqlab.core.escaping`, tables in :mod:`~pqlab.core.tables`), inputs checked where they enter
(:mod:`~pqlab.core.inputs`), builds as records (:mod:`~pqlab.core.builds`), the project's folders, atomic
files and checksums (:mod:`~pqlab.core.paths`, :mod:`~pqlab.core.files`, :mod:`~pqlab.core.integrity`) and
the published reference tables with their provenance (:mod:`~pqlab.core.references`).
"""
