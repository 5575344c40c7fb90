# Generated from stack azure-train by `gpufleet jobs examples --stack azure-train`: do not edit, regenerate.
# Pool h100 of cluster train: its image with Ray 2.46.0 (the pinned KubeRay's sample Ray
# version) for the RayJob example without a pip install at pod start. Build and push it, then
#   gpufleet jobs examples --stack azure-train --ray-image <registry>/<name>:<tag>
FROM nvcr.io/nvidia/pytorch:25.03-py3
RUN python3 -m pip install --no-cache-dir 'ray[default,train]==2.46.0'
