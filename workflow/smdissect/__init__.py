"""smdissect: a cycle-level GPU microarchitecture study as one Snakemake workflow."""

__version__ = "0.1.0"
