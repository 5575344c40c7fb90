"""gpufleet's CLI: cli.py wires the rooms below (engine, review, checks, jobs, netsim, deploy) into one command.

A gpufleet process builds hundreds of thousands of long-lived objects (SDK modules, then a program's futures and
outputs, alive until it ends); at the default thresholds the cyclic collector walked that growing heap again and
again, a third of a large preview's CPU (benchmarks/preview_bench.py, whose other side sets GPUFLEET_GC_DEFAULTS=1).
Garbage is still collected, less often; peak memory stays the same. While a stack's program runs the collector is off
altogether (gpufleet/engine/levers.py: untraced_heap).
"""

import gc
import os

if os.environ.get("GPUFLEET_GC_DEFAULTS") != "1":
    gc.set_threshold(10_000, 50, 1_000)
