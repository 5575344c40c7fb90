"""Example training jobs generated from a stack's fleet, and the image their Ray runs on."""
