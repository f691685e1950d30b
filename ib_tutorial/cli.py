"""The `ib-tutorial` command line."""
from __future__ import annotations

import argparse

from .presets import ENV_VAR, PAPER_OPEN_CHOICES, PRESETS


def _show_presets(_args: argparse.Namespace) -> None:
    for preset in PRESETS.values():
        print(f"{preset.name:8s} {preset.description}")
        print(f"{'':8s} probe: {preset.probe}")
        print(f"{'':8s} data: {preset.data}")
    print(f"\nChoose one with `export {ENV_VAR}=<name>` or `--preset <name>`.")
    print("Choices the paper leaves open, with their defaults:")
    for key, text in PAPER_OPEN_CHOICES.items():
        print(f"  {key}: {text}")


def _show_datasets(_args: argparse.Namespace) -> None:
    from .data import DATASETS
    from .paths import DATA_ENV_VAR, data_root

    for name, info in DATASETS.items():
        print(f"{name:19s} {info.kind:16s} splits: {', '.join(info.splits):16s} {info.description}")
    print(f"\nReal data lives under {data_root()} (set {DATA_ENV_VAR} to move it); fetch it with")
    print("`python -c \"from ib_tutorial.data import get_dataset; get_dataset('uc-merced', 'train', download=True)\"`.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ib-tutorial", description="Measure how ViTs compress information.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("presets", help="list the named settings").set_defaults(func=_show_presets)
    commands.add_parser("datasets", help="list the datasets get_dataset knows").set_defaults(func=_show_datasets)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
