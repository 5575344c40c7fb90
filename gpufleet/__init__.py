"""gpufleet's CLI: cli.py wires the rooms below (engine, review, checks, jobs, netsim, deploy) into one command."""
