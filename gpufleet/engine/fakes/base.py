"""Shared shapes of the FAKE cloud answers: one module per cloud fills them in."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from pulumi.runtime import MockResourceArgs

Outputs = Callable[[MockResourceArgs, str], dict[str, Any]]  # (resource, physical id) -> outputs
Invoke = Callable[[dict[str, Any]], dict[str, Any]]  # invoke args -> result


def hex_id(seed: str, length: int = 17) -> str:
    """A stable fake id: the same resource name gives the same id on every run."""
    return hashlib.sha256(seed.encode()).hexdigest()[:length]
