"""`gpufleet capacity apply`: carry one month of an accepted plan into the stack files.

need.py derives what the plan runs and commits; propose.py maps it onto the stacks' pools and Kueue
queues; draft.py writes a new stack for a region no stack provisions; stackdoc.py reads and writes stack
files round-trip (comments and layout kept); render.py shows the edits and the diff.
"""
