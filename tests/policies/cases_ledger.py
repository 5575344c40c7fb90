"""The reserved-capacity policies against a recorded ledger (tests/policies/data/ledger.json, a FAKE typed for the
tests): the aws-train h100 pool draws on capacity block cr-0a1b2c3d4e5f60718, which ends 2026-03-15T11:30Z; an
ODCR in us-east-1 and one in us-west-2 and a GCP reservation train-h100 are active and drawn on by no pool.

Each case is judged at a fixed time (``as_of``) on each side of a rule; every message is typed here."""

from pathlib import Path

from tests.policies import keys as k
from tests.policies.helpers import Case, case

LEDGER = "tests/policies/data/ledger.json"  # relative: read from the project root
CURRENT, ADVICE = "capacity-not-expired", "capacity-ending-or-idle"
BLOCK = "cr-0a1b2c3d4e5f60718"
ROOT = Path(__file__).resolve().parents[2]


def config(policy: str, as_of: str, ledger: str | None = LEDGER, **more: object) -> dict:
    level = "mandatory" if policy == CURRENT else "advisory"
    return {policy: {"enforcementLevel": level, "ledger_json": ledger, "as_of": as_of, **more}}


EXPIRED = (f"pool train/h100 draws on capacity_block {BLOCK}, which ended on 2026-03-15: its nodes cannot start on "
           "it. Point the pool at current capacity or change its capacity type.")
# 2026-03-01T11:30Z to 2026-03-15T11:30Z: 14 days
ENDING = (f"pool train/h100 draws on capacity_block {BLOCK}, which ends on 2026-03-15 (in 14 day(s), within 30): "
          "renew or replace it before then.")
IDLE_ODCR = ("capacity_reservation cr-0123456789abcdef0 (16 GPUs in use1-az4) is active and billed, and no pool of "
             "the stacks references it: it is paid for while idle.")
IDLE_GCP = ("reservation train-h100 (64 GPUs in us-central1-a) is active and billed, and no pool of the stacks "
            "references it: it is paid for while idle.")
UNLISTED = ("pool train/h100 draws on cr-00000000000000abc, and the ledger does not list it (recorded before it was "
            "bought, or without the stack that names it): cannot tell whether its nodes can start. Record the ledger "
            "with `gpufleet capacity ledger --live --format json` and check again.")
NO_AZURE = ("cannot tell which azure capacity is billed while idle: the ledger has no live state for azure (record "
            "it with `gpufleet capacity ledger --live --format json` where that cloud's credentials are)")
UNCONFIGURED = ("cannot check reserved capacity: no ledger is configured. Record one where the cloud credentials are "
                "(gpufleet capacity ledger --live --format json > ledger.json) and set capacity-not-expired."
                "ledger_json, or disable capacity-not-expired")
MISSING = (f"capacity-not-expired.ledger_json: 1 problem(s) in the input: - {ROOT}/tests/policies/data/nothing.json: "
           f"is not a capacity ledger document ([Errno 2] No such file or directory: '{ROOT}/tests/policies/data/"
           "nothing.json'). Record one with `gpufleet capacity ledger --live --format json > FILE`.")
TARGET = "capacityReservationSpecification.capacityReservationTarget.capacityReservationId"
RESERVED = {"nodeConfig.reservationAffinity": {"consumeReservationType": "SPECIFIC_RESERVATION",
                                               "key": "compute.googleapis.com/reservation-name",
                                               "values": ["projects/p/reservations/train-h100"]}}

CASES = [
    # expired: end <= now, on the pool that draws on it
    case(CURRENT, "aws-train", k.NG_H100, {}, EXPIRED, config=config(CURRENT, "2026-03-15T11:30:00+00:00"),
         label="expired-at-its-end"),
    case(CURRENT, "aws-train", k.NG_H100, {}, config=config(CURRENT, "2026-03-15T11:29:59+00:00"),
         label="a-second-before-its-end"),
    case(CURRENT, "aws-train", k.LT_H100, {TARGET: "cr-00000000000000abc"}, UNLISTED, on=k.NG_H100,
         config=config(CURRENT, "2026-03-01"), label="capacity-the-ledger-does-not-list"),
    case(CURRENT, "aws-train", k.NG_H100, {}, UNCONFIGURED, on=None, config=config(CURRENT, "2026-03-01", None),
         label="on-without-a-ledger"),
    case(CURRENT, "aws-train", k.NG_H100, {}, MISSING, on=None,
         config=config(CURRENT, "2026-03-01", "tests/policies/data/nothing.json"), label="ledger-file-missing"),
    # ending within warn_days (on the pool), and the idle ODCR in the stack's region (not the us-west-2 one)
    Case(ADVICE, "aws-train", ((k.NG_H100, {}),), [(k.NG_H100, ENDING), (None, IDLE_ODCR)],
         config(ADVICE, "2026-03-01T11:30:00+00:00"), "ending-within-30-days-and-idle"),
    case(ADVICE, "aws-train", k.NG_H100, {}, IDLE_ODCR, on=None,
         config=config(ADVICE, "2026-03-01T11:30:00+00:00", warn_days=13), label="14-days-is-beyond-13"),
    # a GKE pool drawing on the reservation by its full name is not idle; on demand, the reservation is
    case(ADVICE, "gke", k.GKE_POOL, RESERVED, config=config(ADVICE, "2026-03-01"), label="gcp-reservation-drawn-on"),
    case(ADVICE, "gke", k.GKE_POOL, {}, IDLE_GCP, on=None, config=config(ADVICE, "2026-03-01"),
         label="gcp-reservation-idle"),
    # no live Azure state in the ledger: idle capacity there cannot be found, and says so
    case(ADVICE, "aks", k.AKS_POOL, {}, NO_AZURE, on=None, config=config(ADVICE, "2026-03-01"),
         label="no-live-state-for-the-cloud"),
]
