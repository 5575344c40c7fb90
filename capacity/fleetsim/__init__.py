"""A fleet simulator: replay a job trace against the fleet's workers under MultiKueue dispatch policies.

It models dispatch, not Kueue's code: see docs/fleet-queue.md, "The simulator and its limits"."""
