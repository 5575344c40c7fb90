"""Checks on a captured graph: the policy pack over the analyzer gRPC protocol, and provider-schema conformance."""
