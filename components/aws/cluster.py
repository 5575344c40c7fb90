"""The EKS control plane: private endpoint, KMS envelope encryption of secrets, audit logs, API access
entries, and the core add-ons (VPC CNI with Pod Identity, CoreDNS, kube-proxy, Pod Identity agent)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components.aws.iam import CLUSTER_POLICIES, role
from components.kubeconfig import exec_kubeconfig

LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]
LOG_RETENTION_DAYS = 90
ADMIN_POLICY = "arn:{partition}:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
# EFA-only interfaces (every card but the first on p5/p5en/p6) need VPC CNI 1.18.5 or later:
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html#efa-only-interfaces
MIN_VPC_CNI = (1, 18, 5)
CORE_ADDONS = ("eks-pod-identity-agent", "vpc-cni", "coredns", "kube-proxy")


@dataclass(frozen=True)
class EksClusterArgs:
    cluster_name: str
    kubernetes_version: str
    subnet_ids: list[pulumi.Input[str]]
    public_endpoint: bool
    public_access_cidrs: list[str]
    admins: list[str]
    partition: pulumi.Input[str]
    tags: dict[str, str]
    runner_cidrs: list[str] = field(default_factory=list)  # the in-network deployer's addresses (docs/clouds.md)
    manager_cidrs: list[str] = field(default_factory=list)  # a MultiKueue manager's node subnets (docs/fleet-queue.md)


def vpc_cni_version(version: str) -> str:
    """Refuse a VPC CNI too old for EFA-only interfaces rather than build nodes that cannot use them."""
    numbers = tuple(int(p) for p in version.lstrip("v").split("-")[0].split("."))
    if numbers < MIN_VPC_CNI:
        raise ValueError(f"VPC CNI {version} is older than v{'.'.join(map(str, MIN_VPC_CNI))}, "
                         "which EFA-only interfaces need; pick a newer Kubernetes version")
    return version


class EksCluster(pulumi.ComponentResource):
    def __init__(self, name: str, args: EksClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpufleet:aws:EksCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.secrets_key = aws.kms.Key(f"{name}-secrets", description=f"EKS secrets envelope key for {name}",
                                       enable_key_rotation=True, deletion_window_in_days=30, tags=args.tags,
                                       opts=child)
        logs = aws.cloudwatch.LogGroup(f"{name}-logs", name=f"/aws/eks/{args.cluster_name}/cluster",
                                       retention_in_days=LOG_RETENTION_DAYS, tags=args.tags, opts=child)
        control_role = role(f"{name}-control-plane", "eks.amazonaws.com", CLUSTER_POLICIES, args.tags, child,
                            args.partition, tag_session=True)
        self.cluster = _control_plane(name, args, control_role, self.secrets_key, logs, child)
        _admin_access(name, args, self.cluster, child)
        self.addons = _core_addons(name, args, self.cluster, child)
        self.name = self.cluster.name
        self.security_group_id = self.cluster.vpc_config.cluster_security_group_id
        _runner_access(name, args, self.security_group_id, child)
        self.endpoint = self.cluster.endpoint
        self.oidc_issuer = self.cluster.identities[0].oidcs[0].issuer
        self.kubeconfig = pulumi.Output.secret(kubeconfig(self.cluster))
        self.register_outputs({"name": self.name, "endpoint": self.endpoint, "kubeconfig": self.kubeconfig})


def _control_plane(name: str, args: EksClusterArgs, control_role: aws.iam.Role, key: aws.kms.Key,
                   logs: aws.cloudwatch.LogGroup, opts: pulumi.ResourceOptions) -> aws.eks.Cluster:
    return aws.eks.Cluster(
        f"{name}-eks",
        name=args.cluster_name,
        version=args.kubernetes_version,
        role_arn=control_role.arn,
        vpc_config={"subnet_ids": args.subnet_ids, "endpoint_private_access": True,
                    "endpoint_public_access": args.public_endpoint,
                    "public_access_cidrs": args.public_access_cidrs or None},
        encryption_config={"provider": {"key_arn": key.arn}, "resources": ["secrets"]},
        enabled_cluster_log_types=LOG_TYPES,
        access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": False},
        upgrade_policy={"support_type": "STANDARD"},
        bootstrap_self_managed_addons=False,
        tags=args.tags,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[logs])),
    )


def _admin_access(name: str, args: EksClusterArgs, cluster: aws.eks.Cluster, opts: pulumi.ResourceOptions) -> None:
    policy = pulumi.Output.from_input(args.partition).apply(lambda p: ADMIN_POLICY.format(partition=p))
    for i, principal in enumerate(args.admins):
        entry = aws.eks.AccessEntry(f"{name}-admin-{i}", cluster_name=cluster.name, principal_arn=principal,
                                    type="STANDARD", tags=args.tags, opts=opts)
        aws.eks.AccessPolicyAssociation(f"{name}-admin-{i}", cluster_name=cluster.name, principal_arn=principal,
                                        policy_arn=policy, access_scope={"type": "cluster"},
                                        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                                            depends_on=[entry])))


def _runner_access(name: str, args: EksClusterArgs, group_id: pulumi.Input[str], opts: pulumi.ResourceOptions) -> None:
    """The private endpoint's network interfaces carry the cluster security group, which lets in only the cluster's
    own members: the deploy runner's and a MultiKueue manager's addresses get HTTPS to the API server, nothing else
    (https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html)."""
    for who, cidrs, what in (("deploy-runner", args.runner_cidrs, "deploy runner"),
                             ("multikueue-manager", args.manager_cidrs, "MultiKueue manager")):
        for i, cidr in enumerate(cidrs):
            family = {"cidr_ipv6" if ":" in cidr else "cidr_ipv4": cidr}
            aws.vpc.SecurityGroupIngressRule(f"{name}-{who}-{i}", security_group_id=group_id, **family,
                                             ip_protocol="tcp", from_port=443, to_port=443,
                                             description=f"gpufleet {what}: HTTPS to the EKS API server",
                                             tags=args.tags, opts=opts)


def _core_addons(name: str, args: EksClusterArgs, cluster: aws.eks.Cluster,
                 opts: pulumi.ResourceOptions) -> dict[str, aws.eks.Addon]:
    cni_role = role(f"{name}-vpc-cni", "pods.eks.amazonaws.com", ("AmazonEKS_CNI_Policy",), args.tags, opts,
                    args.partition, tag_session=True)
    addons: dict[str, aws.eks.Addon] = {}
    for addon in CORE_ADDONS:
        version = aws.eks.get_addon_version_output(addon_name=addon, kubernetes_version=args.kubernetes_version,
                                                   most_recent=True, opts=pulumi.InvokeOptions(
                                                       provider=opts.provider, parent=opts.parent)).version
        if addon == "vpc-cni":
            version = version.apply(vpc_cni_version)
        identities = ([{"role_arn": cni_role.arn, "service_account": "aws-node"}] if addon == "vpc-cni" else None)
        addons[addon] = aws.eks.Addon(
            f"{name}-{addon}", cluster_name=cluster.name, addon_name=addon, addon_version=version,
            pod_identity_associations=identities, resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="PRESERVE", tags=args.tags,
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                depends_on=[addons["eks-pod-identity-agent"]] if addon == "vpc-cni" else [])))
    return addons


def kubeconfig(cluster: aws.eks.Cluster) -> pulumi.Output[str]:
    """A kubeconfig that authenticates with `aws eks get-token` (no static credentials)."""
    return pulumi.Output.all(cluster.name, cluster.endpoint, cluster.certificate_authority.data).apply(
        lambda a: exec_kubeconfig(a[0], a[1], a[2], "aws", ["eks", "get-token", "--cluster-name", a[0],
                                                             "--output", "json"]))
