"""Read the CloudWatch EMF documents (Powertools metrics) a test captured from stdout."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class DataPoint:
    name: str
    dimensions: dict[str, str]  # `service` included
    values: tuple[float, ...]
    unit: str


def data_points(captured_stdout: str) -> list[DataPoint]:
    points = []
    for line in captured_stdout.splitlines():
        if '"_aws"' not in line:
            continue
        document = json.loads(line)
        for directive in document["_aws"]["CloudWatchMetrics"]:
            for dimension_set in directive["Dimensions"]:
                dimensions = {name: document[name] for name in dimension_set}
                for metric in directive["Metrics"]:
                    value = document[metric["Name"]]
                    values = tuple(value) if isinstance(value, list) else (value,)
                    points.append(DataPoint(metric["Name"], dimensions, values, metric.get("Unit", "")))
    return points


def total(points: list[DataPoint], name: str, **dimensions: str) -> float:
    """The sum of `name`'s values whose dimensions include `dimensions`."""
    return sum(
        sum(point.values) for point in points if point.name == name and dimensions.items() <= point.dimensions.items()
    )
