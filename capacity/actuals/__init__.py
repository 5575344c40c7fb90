"""`gpufleet capacity actuals`: what was bought and what was used, from FOCUS 1.x cost-and-usage exports.

focus.py holds the specification's facts (from the digest capacity/data/recorded/focus_spec.json) and checks an
export's header; load.py reads exports (CSV, Parquet) into DuckDB; queries.py answers finance's questions over
them (commitment and capacity reservation utilisation, GPU spend by team and month, plan against bill);
chargeback.py writes per-team chargeback rows in FOCUS's allocation columns.
"""
