"""Command line entry point for ledger-sync."""

import argparse
import sys

from ledger_sync.config import load_config
from ledger_sync.sync import run_sync


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ledger-sync", description="Sync ledgers.")
    parser.add_argument("--config", default="ledger.toml", help="path to the config file")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--verbose", "-v", action="count", default=0)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = load_config(args.config)
    return run_sync(config, dry_run=args.dry_run, verbosity=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
