"""Azure: capacity reservation groups of a subscription and the capacity reservations in each
(azure-mgmt-compute). A group holds until deleted: no end date. Azure reserved VM instances (the 1- and 3-year
discount) live in the Reservations API, whose SDK gpufleet does not install; they are not listed."""

from __future__ import annotations

from typing import Any

from capacity.ledger.model import Entry, Kind
from components import catalog
from components.catalog import Cloud


def default_client(subscription_id: str) -> Any:
    from azure.identity import DefaultAzureCredential
    from azure.mgmt.compute import ComputeManagementClient

    return ComputeManagementClient(DefaultAzureCredential(), subscription_id)


def fetch(subscription_id: str, client: Any = None) -> list[Entry]:
    client = client or default_client(subscription_id)
    out = []
    for group in client.capacity_reservation_groups.list_by_subscription():
        resource_group = group.id.split("/resourceGroups/", 1)[1].split("/", 1)[0]
        members = list(client.capacity_reservations.list_by_capacity_reservation_group(resource_group, group.name))
        machines = {m.sku.name for m in members}
        gpus = 0
        for m in members:
            machine = catalog.by_name(Cloud.AZURE, m.sku.name)
            gpus += (m.sku.capacity or 0) * (machine.gpus if machine else 0)
        if not gpus:
            continue
        states = sorted({m.provisioning_state for m in members if m.provisioning_state})
        out.append(Entry(cloud="azure", kind=Kind.CAPACITY_RESERVATION_GROUP, id=group.id, region=group.location,
                         zone=",".join(group.zones or []) or None,
                         machine_type=machines.pop() if len(machines) == 1 else None, gpus=gpus,
                         start=min((m.time_created for m in members if m.time_created), default=None),
                         state=",".join(states) or None, active="Succeeded" in states, source="live"))
    return out
