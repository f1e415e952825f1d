"""The atlas across machines: the analysis of notebook 07 (``07_atlas``).  Absolute times do not travel
between machines (clock, core design, compiler and liboqs build all differ); a ratio against a baseline
measured in the same run on the same machine does ("ML-DSA-44 sign / Ed25519 sign").  The notebook compares
each post-quantum algorithm's cost relative to a classical baseline and to a post-quantum anchor
(:mod:`.compared`) on every platform: this machine once per liboqs build and every merged machine's runs
(:mod:`.measure`, :mod:`.platforms`), and the published Raspberry Pi 4 of study 004 and pqm4's Cortex-M4
(:mod:`.published`); it computes each ratio with its interval over rounds, and each platform's ratios over a
reference platform's (:mod:`.ratios`), and shows them as tables (:mod:`.tables`), sentences (:mod:`.prose`)
and figures (:mod:`.figures`).
"""
from __future__ import annotations

from pqlab.studies.atlas.compared import (
    ANCHOR,
    CLASSICAL,
    INTERVAL,
    KIND_LABEL,
    MEASURED,
    NO_INTERVAL,
    NO_ROUNDS,
    PI4,
    PQM4_CLEAN,
    PQM4_FASTEST,
    PUBLISHED,
    STATISTICS,
    TOPIC,
    UNSTATED,
    USES,
    algorithms_to_measure,
    comparisons,
    statistic_text,
    statistic_words,
)
from pqlab.studies.atlas.figures import plot_cross_platform, plot_ratios
from pqlab.studies.atlas.measure import find_bundles, local_identity, measure_local, merge
from pqlab.studies.atlas.platforms import (
    Atlas,
    _measured_groups,
    _unique_labels,
    cpu_features_text,
    reference_platform,
    select_platforms,
    short_cpu,
)
from pqlab.studies.atlas.prose import (
    describe_cross_platform,
    describe_local,
    describe_platforms,
    describe_ratios,
    describe_statistics,
    numbers,
)
from pqlab.studies.atlas.published import published_platforms, published_statistic
from pqlab.studies.atlas.ratios import build_atlas, cross_platform
from pqlab.studies.atlas.tables import (
    platform_table,
    pqm4_table,
    published_ratio_table,
    ratio_table,
    ratio_view,
)

__all__ = [
    "ANCHOR", "CLASSICAL", "INTERVAL", "KIND_LABEL", "MEASURED", "NO_INTERVAL", "NO_ROUNDS", "PI4",
    "PQM4_CLEAN", "PQM4_FASTEST", "PUBLISHED", "STATISTICS", "TOPIC", "UNSTATED", "USES", "Atlas",
    "_measured_groups", "_unique_labels", "algorithms_to_measure", "build_atlas", "comparisons",
    "cpu_features_text", "cross_platform", "describe_cross_platform", "describe_local", "describe_platforms",
    "describe_ratios", "describe_statistics", "find_bundles", "local_identity", "measure_local", "merge",
    "numbers", "platform_table", "plot_cross_platform", "plot_ratios", "pqm4_table", "published_platforms",
    "published_ratio_table", "published_statistic", "ratio_table", "ratio_view", "reference_platform",
    "select_platforms", "short_cpu", "statistic_text", "statistic_words",
]
