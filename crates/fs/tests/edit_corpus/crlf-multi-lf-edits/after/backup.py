import argparse
import shutil
import sys
from pathlib import Path


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Back up a folder to a share.")
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--keep", type=int, default=14)
    parser.add_argument("--dry-run", action="store_true")
    return parser.parse_args(argv)


def prune(target: Path, keep: int, dry_run: bool) -> None:
    backups = sorted(target.glob("backup-*"), reverse=True)
    for old in backups[keep:]:
        if dry_run:
            print(f"would remove {old}")
        else:
            shutil.rmtree(old)


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    if not args.source.is_dir():
        print(f"no such folder: {args.source}", file=sys.stderr)
        return 2
    stamp = args.source.stat().st_mtime_ns
    dest = args.target / f"backup-{stamp}"
    if args.dry_run:
        print(f"would copy {args.source} to {dest}")
    else:
        shutil.copytree(args.source, dest, symlinks=True)
    prune(args.target, args.keep, args.dry_run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
