"""Every Helm chart the add-on layer installs, pinned: chart, repository, version and where it is documented.

Bumping a chart is a one-line change here, reviewed like any other (``gpufleet diff`` shows the new version).
"""

from __future__ import annotations

from components.k8s.model import Chart

GPU_OPERATOR = Chart("gpu-operator", "v25.3.2", "https://helm.ngc.nvidia.com/nvidia",
                     "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/getting-started.html")
NETWORK_OPERATOR = Chart("network-operator", "25.4.0", "https://helm.ngc.nvidia.com/nvidia",
                         "https://docs.nvidia.com/networking/display/kubernetes2540/getting-started-kubernetes.html")
EFA_DEVICE_PLUGIN = Chart("aws-efa-k8s-device-plugin", "v0.5.7", "https://aws.github.io/eks-charts",
                          "https://github.com/aws/eks-charts/tree/master/stable/aws-efa-k8s-device-plugin")
FSX_CSI = Chart("aws-fsx-csi-driver", "1.11.0", "https://kubernetes-sigs.github.io/aws-fsx-csi-driver",
                "https://github.com/kubernetes-sigs/aws-fsx-csi-driver/tree/master/charts/aws-fsx-csi-driver")
AZURE_LUSTRE_CSI = Chart("azurelustre-csi-driver", "0.3.0",
                         "https://raw.githubusercontent.com/kubernetes-sigs/azurelustre-csi-driver/main/charts",
                         "https://learn.microsoft.com/azure/azure-managed-lustre/use-csi-driver-kubernetes")
KUEUE = Chart("oci://registry.k8s.io/kueue/charts/kueue", "0.14.3", "",
              "https://kueue.sigs.k8s.io/docs/installation/#install-via-helm")
KUBE_PROMETHEUS_STACK = Chart("kube-prometheus-stack", "77.5.0", "https://prometheus-community.github.io/helm-charts",
                              "https://github.com/prometheus-community/helm-charts/tree/main/charts/kube-prometheus-stack")

ALL = (GPU_OPERATOR, NETWORK_OPERATOR, EFA_DEVICE_PLUGIN, FSX_CSI, AZURE_LUSTRE_CSI, KUEUE, KUBE_PROMETHEUS_STACK)
