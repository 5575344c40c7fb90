"""`gpufleet capacity ledger`: every GPU capacity commitment of the fleet in one table.

model.py is the entry; stacks.py lists what the stacks reference (offline, through stacks/config and the resolved
fleet) and the planner's own purchases; aws.py, gcp.py and azure.py read the live state where credentials exist;
merge.py joins them by cloud and id; checks.py flags expired, soon-ending and idle-billed capacity.
"""
