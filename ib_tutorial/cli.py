"""The `ib-tutorial` command line."""
from __future__ import annotations

import argparse

from .presets import ENV_VAR, PAPER_OPEN_CHOICES, PRESETS


def _show_presets(_args: argparse.Namespace) -> None:
    for preset in PRESETS.values():
        print(f"{preset.name:8s} {preset.description}")
        print(f"{'':8s} probe: {preset.probe}")
    print(f"\nChoose one with `export {ENV_VAR}=<name>` or `--preset <name>`.")
    print("Choices the paper leaves open, with their defaults:")
    for key, text in PAPER_OPEN_CHOICES.items():
        print(f"  {key}: {text}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ib-tutorial", description="Measure how ViTs compress information.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("presets", help="list the named settings").set_defaults(func=_show_presets)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
