# Generated from stack aws-train by `gpufleet jobs examples --stack aws-train`: do not edit, regenerate.
# Pool h100 of cluster train: its image with Ray 2.46.0 (the pinned KubeRay's sample Ray
# version) for the RayJob example without a pip install at pod start. Build and push it, then
#   gpufleet jobs examples --stack aws-train --ray-image <registry>/<name>:<tag>
FROM 763104351884.dkr.ecr.us-east-1.amazonaws.com/pytorch-training:2.6.0-gpu-py312-cu126-ubuntu22.04-ec2
RUN python3 -m pip install --no-cache-dir 'ray[default,train]==2.46.0'
