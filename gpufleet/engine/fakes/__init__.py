"""FAKE cloud answers for the offline preview, one module per cloud.

Each module exports OUTPUTS (type token -> computed outputs on create), INVOKES (invoke token -> result)
and physical_id (a realistic id, or None for the generic one). Values are realistic in shape and
derived deterministically from resource names, so a preview is stable run to run.
"""

from gpufleet.engine.fakes import aws, azure, gcp, randomness, stackrefs

# randomness: pulumi-random, which every cloud's in-cluster layer uses; stackrefs: the exports of other stacks
CLOUDS = (aws, azure, gcp, randomness, stackrefs)
