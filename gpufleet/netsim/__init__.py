"""The network simulator: what a link profile costs a training run (a model), and the same measured in network
namespaces."""
