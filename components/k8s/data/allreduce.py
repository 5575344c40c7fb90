"""Health gate: all-reduce bus bandwidth across the job's nodes; exit 1 below GATE_BUSBW_GBYTE_PER_S.

Bandwidths as nccl-tests defines them for all-reduce (NVIDIA/nccl-tests v2.19.6, src/all_reduce.cu AllReduceGetBw;
doc/PERFORMANCE.md): algbw = bytes / time, busbw = algbw * 2 (n - 1) / n, in GB/s (1e9 bytes). The threshold (the
catalogue's nccl_busbw_gbyte_per_s) is a bus bandwidth, so busbw is what it is compared with: algbw of a healthy
16-rank run is 16 / 30 of its busbw.

The gate runs NCCL on GPUs. GATE_BACKEND=gloo runs the same measurement on CPU tensors: how the tests execute it."""

import os
import time


def bandwidths(size_bytes: int, seconds: float, ranks: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s of one all-reduce of ``size_bytes`` over ``ranks`` ranks that took ``seconds``."""
    algbw = size_bytes / seconds / 1e9
    return algbw, algbw * 2 * (ranks - 1) / ranks


def judge(size_bytes: int, seconds: float, ranks: int, threshold: float) -> tuple[bool, str]:
    """Whether the run passes, and the line each node prints (the gate's shell reads the number before "GB/s bus
    bandwidth" from it: components/k8s/healthgate.py)."""
    algbw, busbw = bandwidths(size_bytes, seconds, ranks)
    passed = busbw >= threshold
    return passed, (f"{'PASS' if passed else 'FAIL'}: all-reduce of {size_bytes} bytes over {ranks} ranks in "
                    f"{seconds * 1e3:.6g} ms: {busbw:.6g} GB/s bus bandwidth ({algbw:.6g} GB/s algorithm "
                    f"bandwidth), threshold {threshold} GB/s")


def main() -> int:
    import torch
    import torch.distributed as dist

    backend = os.environ.get("GATE_BACKEND", "nccl")
    dist.init_process_group(backend)
    world, local = dist.get_world_size(), int(os.environ["LOCAL_RANK"])
    device = "cuda" if backend == "nccl" else "cpu"
    if device == "cuda":
        torch.cuda.set_device(local)

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    size = int(os.environ.get("GATE_BYTES", str(1 << 30)))
    iterations = int(os.environ.get("GATE_ITERATIONS", "20"))
    data = torch.ones(size // 4, dtype=torch.float32, device=device)
    for _ in range(5):
        dist.all_reduce(data)
    sync()
    start = time.perf_counter()
    for _ in range(iterations):
        dist.all_reduce(data)
    sync()
    passed, line = judge(size, (time.perf_counter() - start) / iterations, world,
                         float(os.environ["GATE_BUSBW_GBYTE_PER_S"]))
    if local == 0:  # one line per node: each node's gate container publishes it
        print(line, flush=True)
    dist.destroy_process_group()
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
