"""The gpufleet CrossGuard policy pack: security, GPU correctness, cost and reliability rules (docs/policies.md)."""
