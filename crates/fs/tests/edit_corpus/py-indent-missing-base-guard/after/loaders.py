"""Loaders for the directory sync job."""

import csv
import json
from pathlib import Path


def load_users(path: Path) -> list[dict]:
    rows = []
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if not row.get("id"):
                continue
            row["id"] = int(row["id"])
            rows.append(row)
    return rows


def load_groups(path: Path) -> list[dict]:
    rows = []
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if not row.get("id"):
                continue
            row["id"] = int(row["id"])
            rows.append(row)
    return rows


def load_overrides(path: Path) -> dict:
    if not path.is_file():
        return {}
    with path.open() as handle:
        return json.load(handle)


def merge(users: list[dict], overrides: dict) -> list[dict]:
    merged = []
    for user in users:
        extra = overrides.get(str(user["id"]), {})
        merged.append({**user, **extra})
    return merged
