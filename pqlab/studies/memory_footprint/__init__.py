"""Notebook 03: how much heap and stack one signature operation needs, beside the Gravity-SPHINCS study.  It
compares, per algorithm and operation, what a :func:`pqlab.runners.memory.driver.measure_memory` run measured
(the method is described there) with a timing run's times (:mod:`.tables`), sets the study's published
Gravity-SPHINCS figures (``data/reference/03_memory_gravity_sphincs.csv``) beside the SPHINCS+/SLH-DSA sets of
its hash length (:mod:`.published`), and shows it all as figures (:mod:`.figures`) and generated text
(:mod:`.prose`).
"""
from pqlab.studies.memory_footprint.figures import plot_gravity, plot_message_sizes, plot_peaks
from pqlab.studies.memory_footprint.prose import (
    closing_note,
    describe_cache,
    describe_caveats,
    describe_findings,
    describe_gravity,
    describe_method,
    describe_time_sizes,
    describe_valgrind,
    numbers,
)
from pqlab.studies.memory_footprint.published import (
    PARAMETERS_TABLE,
    REFERENCE_TABLE,
    TOPIC,
    compare_gravity,
    gravity_bars,
    hash_bytes,
    load_gravity,
    published_table,
)
from pqlab.studies.memory_footprint.tables import (
    FOOTPRINT_LABELS,
    footprint_by_operation,
    footprint_caption,
    footprint_columns,
    footprint_table,
    heap_note,
    memory_table,
    size_table,
    time_table,
)

__all__ = [
    "FOOTPRINT_LABELS", "PARAMETERS_TABLE", "REFERENCE_TABLE", "TOPIC", "closing_note", "compare_gravity",
    "describe_cache", "describe_caveats", "describe_findings", "describe_gravity", "describe_method",
    "describe_time_sizes", "describe_valgrind", "footprint_by_operation", "footprint_caption",
    "footprint_columns", "footprint_table", "gravity_bars", "hash_bytes", "heap_note", "load_gravity",
    "memory_table", "numbers", "plot_gravity", "plot_message_sizes", "plot_peaks", "published_table",
    "size_table", "time_table",
]
