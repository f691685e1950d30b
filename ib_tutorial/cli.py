"""The `ib-tutorial` command line."""
from __future__ import annotations

import argparse
from pathlib import Path

from .presets import ENV_VAR, PAPER_OPEN_CHOICES, PRESETS, get_preset


def _show_presets(_args: argparse.Namespace) -> None:
    for preset in PRESETS.values():
        print(f"{preset.name:8s} {preset.description}")
        print(f"{'':8s} probe: {preset.probe}")
        print(f"{'':8s} data: {preset.data}")
        print(f"{'':8s} ib: {preset.ib}")
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


def _information_plane(args: argparse.Namespace) -> None:
    from .ib import run_information_experiment

    preset = get_preset(args.preset)
    print(f"preset {preset.name}: {preset.ib}")
    experiments = run_information_experiment(preset.ib, tuple(args.activation))
    summaries = {name: experiment.summary() for name, experiment in experiments.items()}
    for name, summary in summaries.items():
        print(f"\n{name}: train accuracy {summary['train_accuracy'][-1]:.3f}, test accuracy {summary['test_accuracy'][-1]:.3f}")
        for estimator in summary["estimators"].values():
            print(f"  {estimator['description']}")
            print("    layer  width  peak I(X;T) (epoch)  final  compression  [bits]")
            rows = zip(summary["layer_widths"], estimator["peak_bits"], estimator["peak_epoch"], estimator["final_bits"], estimator["compression_bits"])
            for layer, (width, peak, epoch, final, drop) in enumerate(rows, start=1):
                print(f"    T{layer}     {width:>3}   {peak:6.2f} ({epoch:>5})      {final:6.2f}  {drop:6.2f}")
    if args.out is not None:
        from .results import write_json_atomic

        write_json_atomic(args.out, {"preset": preset.name, "runs": summaries})
        print(f"\nwrote {args.out}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ib-tutorial", description="Measure how ViTs compress information.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("presets", help="list the named settings").set_defaults(func=_show_presets)
    commands.add_parser("datasets", help="list the datasets get_dataset knows").set_defaults(func=_show_datasets)
    infoplane = commands.add_parser(
        "infoplane",
        help="train the Information Bottleneck toy network and report each layer's compression",
        description="Train the 12-10-7-5-4-3-2 network on the 12-bit task with the chosen preset's "
        "IB settings, estimate every layer's information plane by binning and by the KDE bound, "
        "and print each layer's peak and final I(X;T).",
    )
    infoplane.add_argument("--preset", default=None, help=f"preset name (default: ${ENV_VAR}, else ci)")
    infoplane.add_argument("--activation", nargs="+", default=["tanh", "relu"], choices=["tanh", "relu"])
    infoplane.add_argument("--out", type=Path, default=None, help="also write the planes, accuracies and EED as JSON here")
    infoplane.set_defaults(func=_information_plane)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
