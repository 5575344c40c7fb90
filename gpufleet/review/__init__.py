"""The review of a change: resource diff, GPU disruption risk, monthly cost delta and the pull-request comment."""
