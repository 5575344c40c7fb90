"""The offline preview engine: a stack's real program under the SDK's mock runtime (FAKE cloud answers), its graph
captured and rendered."""
