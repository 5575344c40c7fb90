"""The typed rows every capacity module reads and writes, and the calendar they share.

One model per file kind. Field descriptions double as the "allowed" text of load errors, so a user who
gets a bad row told to them reads the same words as docs/capacity.md.
"""

from __future__ import annotations

import calendar
import datetime as dt
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from components.catalog import Cloud

MONTH_PATTERN = r"^\d{4}-(0[1-9]|1[0-2])$"
Month = Annotated[str, Field(pattern=MONTH_PATTERN, description="a month written YYYY-MM, e.g. 2026-01")]
Name = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^\S(.*\S)?$",
                            description="a non-empty name without leading or trailing spaces")]
Region = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]*$",
                              description="a cloud region name such as us-east-1, us-central1 or eastus")]
GpuHours = Annotated[float, Field(ge=0, allow_inf_nan=False, description="a number of GPU-hours >= 0")]
Usd = Annotated[float, Field(ge=0, allow_inf_nan=False, description="an amount in US dollars >= 0")]

HOURS_1Y = 8760  # the hours a one-year commitment charges, whatever the calendar
HOURS_3Y = 26280
# A capacity block bought for a calendar month: AWS sells blocks in 1-day steps up to 14 days, then 7-day steps
# (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html), so the shortest block that
# covers any month of 29-31 days is 35 days. Prepaid: charged whether used or not.
HOURS_CAPACITY_BLOCK = 35 * 24
# A reservation held for a calendar month bills every hour of that month, used or not (charged_hours).


class Market(StrEnum):
    """Which quota a GPU counts against."""

    ON_DEMAND = "on_demand"
    SPOT = "spot"


class Option(StrEnum):
    """How a GPU-hour is bought (docs/capacity.md, "Purchase options", states each one's planning semantics)."""

    ON_DEMAND = "on_demand"
    SPOT = "spot"
    COMMIT_1Y = "commit_1y"  # AWS Savings Plan, GCP committed-use discount, Azure reserved VM instance
    COMMIT_3Y = "commit_3y"
    RESERVATION = "reservation"  # AWS ODCR, GCP (calendar / future) reservation, Azure capacity reservation
    CAPACITY_BLOCK = "capacity_block"  # AWS EC2 Capacity Blocks for ML: prepaid for a fixed duration
    FLEX_START = "flex_start"  # GCP Dynamic Workload Scheduler flex-start: pay per hour used

    @property
    def is_commit(self) -> bool:
        """Bought in whole nodes for a term and charged whether used or not."""
        return self in _TERM_MONTHS

    @property
    def market(self) -> Market:
        """Only spot counts against the spot quota; everything else against the on-demand quota."""
        return Market.SPOT if self is Option.SPOT else Market.ON_DEMAND

    @property
    def term_months(self) -> int:
        return _TERM_MONTHS.get(self, 0)

    @property
    def term_hours(self) -> int:
        """The hours a commitment or capacity block charges whatever its start; 0 for a reservation, whose charge
        depends on its month (``charged_hours``), and for options paid per hour used."""
        return {Option.COMMIT_1Y: HOURS_1Y, Option.COMMIT_3Y: HOURS_3Y,
                Option.CAPACITY_BLOCK: HOURS_CAPACITY_BLOCK}.get(self, 0)


_TERM_MONTHS = {Option.COMMIT_1Y: 12, Option.COMMIT_3Y: 36, Option.CAPACITY_BLOCK: 1, Option.RESERVATION: 1}

# what each cloud calls an option, for reports and PR comments
OPTION_LABELS: dict[tuple[str, Option], str] = {
    ("aws", Option.COMMIT_1Y): "EC2 Instance Savings Plan, 1 year",
    ("aws", Option.COMMIT_3Y): "EC2 Instance Savings Plan, 3 years",
    ("aws", Option.RESERVATION): "On-Demand Capacity Reservation",
    ("aws", Option.CAPACITY_BLOCK): "EC2 Capacity Block for ML (prepaid)",
    ("gcp", Option.COMMIT_1Y): "committed use discount, 1 year",
    ("gcp", Option.COMMIT_3Y): "committed use discount, 3 years",
    ("gcp", Option.RESERVATION): "reservation",
    ("gcp", Option.FLEX_START): "flex-start (Dynamic Workload Scheduler)",
    ("azure", Option.COMMIT_1Y): "reserved VM instance, 1 year",
    ("azure", Option.COMMIT_3Y): "reserved VM instance, 3 years",
    ("azure", Option.RESERVATION): "capacity reservation",
}


def option_label(cloud: str, option: Option | str) -> str:
    option = Option(option)
    return OPTION_LABELS.get((str(getattr(cloud, "value", cloud)), option), option.value.replace("_", "-"))


class Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)


class DemandRow(Row):
    """One line of demand.csv: GPU-hours a team needs in a month."""

    month: Month
    team: Name
    gpu: Name = Field(description="a catalogue GPU product such as H100, H100-NVL, H200, A100-40GB, A100-80GB or L4")
    gpu_hours: GpuHours
    gang_gpus: int = Field(ge=1, le=100_000, description="a whole number >= 1: GPUs one job needs inside a "
                           "single interconnect domain (1 when jobs may spread)")
    spot_ok: bool = Field(description="true or false: whether this work may run on spot capacity")

    @property
    def key(self) -> tuple[str, str, str, int, bool]:
        return (self.month, self.team, self.gpu, self.gang_gpus, self.spot_ok)


class HistoryRow(Row):
    """One line of history.csv: GPU-hours a team used in a past month."""

    month: Month
    team: Name
    gpu: Name = Field(description="a catalogue GPU product such as H100, H100-NVL, H200, A100-40GB, A100-80GB or L4")
    gpu_hours: GpuHours
    gang_gpus: int | None = Field(default=None, ge=1, description="optional: a whole number >= 1, carried "
                                  "into the forecast demand")
    spot_ok: bool | None = Field(default=None, description="optional: true or false, carried into the forecast")


class OfferRow(Row):
    """One line of offers.csv: a price for one machine type, region and way of buying."""

    cloud: Cloud = Field(description="one of aws, gcp, azure")
    region: Region
    machine_type: Name = Field(description="a catalogue machine type of that cloud, e.g. p5.48xlarge")
    gpu: Name = Field(description="the catalogue GPU product of that machine type")
    gpus_per_node: int = Field(ge=1, le=1024, description="a whole number >= 1: GPUs in one node")
    option: Option = Field(description="one of " + ", ".join(o.value for o in Option))
    usd_per_gpu_hour: float = Field(gt=0, allow_inf_nan=False, description="a price in USD per GPU-hour > 0")
    source: str = Field(default="", description="where the price comes from (a link, or 'derived: ...')")
    as_of: str = Field(default="", description="the date the price was read, YYYY-MM-DD")

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.cloud.value, self.region, self.machine_type, self.option.value)


class QuotaRow(Row):
    """One line of quotas.csv: GPUs that may run at once in a region, converted to GPUs."""

    cloud: Cloud = Field(description="one of aws, gcp, azure")
    region: Region
    gpu: Name = Field(description="a catalogue GPU product such as H100 or A100-80GB")
    market: Market = Field(description="one of on_demand, spot")
    max_gpus: int = Field(ge=0, le=10_000_000, description="a whole number >= 0: GPUs that may run at once")

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.cloud.value, self.region, self.gpu, self.market.value)


class PlanLine(Row):
    """One line of plan.csv: GPU-hours of one demand row served by one cloud, region and option."""

    month: Month
    team: Name
    gpu: Name
    cloud: Cloud
    region: Region
    option: Option
    gpu_hours: GpuHours
    usd: Usd = Field(description="usage cost; 0 for commitment lines (charged in commitments.csv)")
    gang_gpus: int = Field(ge=1)
    spot_ok: bool

    @property
    def demand_key(self) -> tuple[str, str, str, int, bool]:
        return (self.month, self.team, self.gpu, self.gang_gpus, self.spot_ok)


class CommitmentLine(Row):
    """One line of commitments.csv: whole nodes committed from a start month for a term."""

    cloud: Cloud
    region: Region
    machine_type: Name
    gpu: Name
    option: Option
    start_month: Month
    nodes: int = Field(ge=1)
    gpus: int = Field(ge=1)
    usd_total: Usd


class HeldRow(Row):
    """One line of held.csv: capacity the fleet already holds (from a recorded ledger, docs/ledger.md). The plan
    uses it first, at sunk cost, only from its start to its end, at its own cloud, region and machine type."""

    id: str = Field(min_length=1, description="the cloud's id of the capacity block or reservation (an Azure id "
                    "is a whole resource path)")
    cloud: Cloud = Field(description="one of aws, gcp, azure")
    region: Region
    machine_type: Name = Field(description="a catalogue machine type of that cloud, e.g. p5.48xlarge")
    gpu: Name = Field(description="the catalogue GPU product of that machine type")
    gpus: int = Field(ge=1, description="a whole number >= 1: GPUs it holds (whole nodes x GPUs per node)")
    option: Option = Field(description="how it was bought: capacity_block, reservation, commit_1y or commit_3y")
    start: dt.datetime | None = Field(default=None, description="ISO 8601 with a zone; empty: held already")
    end: dt.datetime | None = Field(default=None, description="ISO 8601 with a zone; empty: held until released")
    usd_per_hour: float | None = Field(default=None, ge=0, allow_inf_nan=False,
                                       description="what it bills per hour, used or not; empty: unknown")


class ShortfallLine(Row):
    """One line of shortfall.csv: GPU-hours of a demand row the plan leaves unserved."""

    month: Month
    team: Name
    gpu: Name
    gang_gpus: int = Field(ge=1)
    spot_ok: bool
    unmet_gpu_hours: GpuHours
    reason: str


class QuotaRequest(Row):
    """One line of quota_requests.csv: a quota increase that removes shortfall."""

    cloud: Cloud
    region: Region
    gpu: Name
    market: Market
    current_max_gpus: int = Field(ge=0)
    requested_max_gpus: int = Field(ge=0)
    increase_gpus: int = Field(ge=1)
    native_quota: str = Field(description="the cloud's own quota code / metric / VM family")
    native_unit: str = Field(description="vcpus or gpus")
    native_increase: int = Field(ge=0)
    month_needed: Month
    lead_time_days: int = Field(ge=0)
    request_by: str = Field(description="the day to file the request by, YYYY-MM-DD")
    gpu_hours_enabled: GpuHours


# --- the calendar ---------------------------------------------------------------------------------------

def hours(month: str) -> int:
    """hours(month) = days in the month x 24."""
    year, mon = int(month[:4]), int(month[5:7])
    return calendar.monthrange(year, mon)[1] * 24


def charged_hours(option: Option, start_month: str) -> int:
    """Hours a prepaid purchase starting in ``start_month`` is charged for, used or not: a reservation held for a
    calendar month bills each of its hours (hours(month): 720 h in a 30-day month, not a flat 744 or 730); a
    commitment or capacity block its fixed term (Option.term_hours)."""
    return hours(start_month) if option is Option.RESERVATION else option.term_hours


def month_start(month: str) -> dt.datetime:
    return dt.datetime(int(month[:4]), int(month[5:7]), 1, tzinfo=dt.UTC)


def covered_hours(start: dt.datetime | None, end: dt.datetime | None, month: str) -> float:
    """Hours of ``month`` (UTC) inside [start, end): capacity held for part of a month serves only that part."""
    first, after = month_start(month), month_start(add_months(month, 1))
    lo = max(first, start) if start is not None else first
    hi = min(after, end) if end is not None else after
    return max(0.0, (hi - lo).total_seconds() / 3600)


def add_months(month: str, n: int) -> str:
    index = int(month[:4]) * 12 + int(month[5:7]) - 1 + n
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def month_span(first: str, last: str) -> list[str]:
    """Every month from first to last, inclusive (empty when last is before first)."""
    count = (int(last[:4]) * 12 + int(last[5:7])) - (int(first[:4]) * 12 + int(first[5:7])) + 1
    return [add_months(first, i) for i in range(max(count, 0))]
