"""`python -m smdissect`: the stage commands the Snakemake rules call."""

from .cli import main

main()
