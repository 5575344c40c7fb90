"""The capacity planner: forecast, quotas, an optimal multi-cloud plan, reconciliation (docs/capacity.md)."""
