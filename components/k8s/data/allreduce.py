"""Health gate: all-reduce bus bandwidth across the job's nodes; exit 1 below GATE_BUSBW_GBYTE_PER_S.

Bus bandwidth as nccl-tests reports it: bytes / time * 2 (n - 1) / n, in GB/s (1e9 bytes)."""

import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
size = int(os.environ.get("GATE_BYTES", str(1 << 30)))
data = torch.ones(size // 4, dtype=torch.float32, device="cuda")
for _ in range(5):
    dist.all_reduce(data)
torch.cuda.synchronize()
iterations = 20
start = time.perf_counter()
for _ in range(iterations):
    dist.all_reduce(data)
torch.cuda.synchronize()
seconds = (time.perf_counter() - start) / iterations
busbw = size / seconds * 2 * (world - 1) / world / 1e9
threshold = float(os.environ["GATE_BUSBW_GBYTE_PER_S"])
if int(os.environ["LOCAL_RANK"]) == 0:  # one line per node: each node's gate container publishes it
    verdict = "PASS" if busbw >= threshold else "FAIL"
    print(f"{verdict}: all-reduce of {size} bytes over {world} ranks: {busbw:.1f} GB/s bus bandwidth, "
          f"threshold {threshold} GB/s", flush=True)
dist.destroy_process_group()
raise SystemExit(0 if busbw >= threshold else 1)
