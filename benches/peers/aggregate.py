"""Reads the per-round JSON lines of run.sh and prints one JSON line per figure: the median
over the rounds (and the medians of numeric details), with every round's value."""

from __future__ import annotations

import json
import statistics
import sys
from collections import OrderedDict


def main(path: str) -> None:
    figures: "OrderedDict[str, list[dict]]" = OrderedDict()
    skipped: "OrderedDict[str, str]" = OrderedDict()
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            row = json.loads(line)
            if "skipped" in row:
                skipped[row["figure"]] = row["skipped"]
            else:
                figures.setdefault(row["figure"], []).append(row)
    for name, rows in figures.items():
        out = {"figure": name, "median": round(statistics.median(r["value"] for r in rows), 3),
               "unit": rows[0]["unit"], "rounds": [r["value"] for r in rows]}
        for key in rows[0]:
            if key in ("figure", "value", "unit", "round"):
                continue
            values = [r[key] for r in rows if key in r]
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
                out[key] = round(statistics.median(values), 3)
            else:
                out[key] = values[0]
        print(json.dumps(out))
    for name, reason in skipped.items():
        print(json.dumps({"figure": name, "skipped": reason}))


if __name__ == "__main__":
    main(sys.argv[1])
