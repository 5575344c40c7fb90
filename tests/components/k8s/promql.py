"""PromQL parsing (promql-parser, the Rust parser GreptimeDB uses, as a Python wheel) and the metric names a
query reads."""

from __future__ import annotations

from typing import Any

import promql_parser


def metric_names(query: str) -> set[str]:
    """Every metric name a query selects; raises ValueError when the query does not parse."""
    return _names(promql_parser.parse(query))


def _names(node: Any) -> set[str]:
    if isinstance(node, promql_parser.VectorSelector):
        return {node.name} if node.name else set()
    if isinstance(node, promql_parser.MatrixSelector):
        return _names(node.vector_selector)
    if isinstance(node, promql_parser.BinaryExpr):
        return _names(node.lhs) | _names(node.rhs)
    if isinstance(node, promql_parser.AggregateExpr):
        return _names(node.expr) | (_names(node.param) if node.param is not None else set())
    if isinstance(node, promql_parser.Call):
        return set().union(*(_names(a) for a in node.args))
    if isinstance(node, (promql_parser.ParenExpr, promql_parser.UnaryExpr, promql_parser.SubqueryExpr)):
        return _names(node.expr)
    return set()  # number and string literals
