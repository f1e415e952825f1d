"""Notebook 05, energy per operation (study 004, Raspberry Pi 4 + INA219): it compares our times and,
where a power source exists, our energies with the study's published table (checked in :mod:`.published`:
time x power, idle share, sensor resolution, a replay), ranks algorithms by operations per joule, sets the
Pi's times beside ours with intervals from our samples, and recommends algorithms per use case -- all from
data, with every energy labelled by its basis (:mod:`.names`); nothing here invents power.  Modules:
:mod:`.measure` (energy runs and our energies), :mod:`.tables`, :mod:`.prose`, :mod:`.recommendations`,
:mod:`.figures`, :mod:`.published`."""
from pqlab.studies.energy_pi4.measure import energy_long, live_energy_runs, live_rows, vi_samples
from pqlab.studies.energy_pi4.names import KIND_LABEL, TOPIC, USE, _is_pq, is_modelled, scheme_of, short_name
from pqlab.studies.energy_pi4.prose import (
    cross_platform_caption,
    cross_platform_markdown,
    describe_build_here,
    describe_comparison_caveats,
    describe_energy_here,
    describe_hqc,
    describe_implementations,
    describe_measured,
    power_source_markdown,
)
from pqlab.studies.energy_pi4.recommendations import implementation_label, recommendations_markdown
from pqlab.studies.energy_pi4.tables import (
    aead_table,
    algorithm_table,
    cross_platform,
    efficiency_ranking,
    energy_here_table,
    failures,
    heatmap_matrix,
    numbers,
    our_rankings,
    our_time_energy,
    rank_correlation,
    timing_table,
    use_totals,
)

__all__ = [
    "KIND_LABEL", "TOPIC", "USE", "_is_pq", "aead_table", "algorithm_table", "cross_platform",
    "cross_platform_caption", "cross_platform_markdown", "describe_build_here", "describe_comparison_caveats",
    "describe_energy_here", "describe_hqc", "describe_implementations", "describe_measured",
    "efficiency_ranking", "energy_here_table", "energy_long", "failures", "heatmap_matrix",
    "implementation_label", "is_modelled", "live_energy_runs", "live_rows", "numbers", "our_rankings",
    "our_time_energy", "power_source_markdown", "rank_correlation", "recommendations_markdown", "scheme_of",
    "short_name", "timing_table", "use_totals", "vi_samples",
]
