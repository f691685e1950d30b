"""The `ib-tutorial` command line."""
from __future__ import annotations

import argparse
import errno
import functools
import os
import sys
import traceback
import warnings
from pathlib import Path

from . import __version__
from .machine import keep_freed_memory
from .command_line import option, spoken_as_options, value_parser
from .data import DATASETS, check_dataset_options, dataset_on_disk, held_out_split, options_on_disk, subsets
from .data.spec import parse_option
from .compact import read_json
from .files import DATA_ENV_VAR, data_root, display_path, write_json_atomic
from .ib import saved_information_experiment
from .measure.block_profile import TOKEN_CHOICES
from .measure.knn import POOLS as PRUNING_POOLS
from .models import PUBLISHED_VIT_SMALL, PretrainedUnavailable
from .presets import ENV_VAR, PAPER_OPEN_CHOICES, PRESETS, get_preset, training_overrides
from .book.tables import write_comparison_table
from .book.measurement import DEFAULT, IMAGES as MEASUREMENT_IMAGES, REPLICATES as MEASUREMENT_REPLICATES
from .book.measurement import MeasurementResult, controls_table, measure_run, variants_table
from .book.paper import EXTRA_DATASETS, PAPER_DATASETS
from .book.records import load_profile_record
from .book.pretrained import converged_folder, profile_published, prune_published
from .book.reproduce import export_bundle, reproduce
from .book.run_profiles import measure_factors, profile_run, prune_run, raw_patch_eed
from .training.loop import NonFiniteLossError, TrainingOutOfMemory, TrainingStopped, train
from .training.run_config import RunSpec
from .training.runs import CheckpointError, RunLockedError

PACKAGE = Path(__file__).resolve().parent
# Errors whose message says what to do: shown as one line, without a traceback (a ValueError
# only when the package raised it).
USER_ERRORS = (OSError, ValueError, NonFiniteLossError, CheckpointError, RunLockedError, TrainingOutOfMemory,
               PretrainedUnavailable)
# Arguments that name a file or folder, with the words that name them in a message.
PATH_ARGUMENTS = {"out": "--out", "root": "--root", "run_dir": "RUN_DIR", "weights": "--weights", "export": "--export"}


def _show_presets(_args: argparse.Namespace) -> None:
    for preset in PRESETS.values():
        print(f"{preset.name:8s} {preset.description}")
        for section in ("profile", "worlds", "ib"):
            print(f"{'':8s} {section}: {getattr(preset, section)}")
        t = preset.train
        print(f"{'':8s} train: {t.epochs} epochs, batch {t.batch_size}, K {t.out_dim}, "
              f"{t.local_crops_number} local crops, lr {t.lr} per 256")
    print(f"\nChoose one with `export {ENV_VAR}=<name>` or `--preset <name>`.")
    print("Choices the paper leaves open, with their defaults:")
    for key, text in PAPER_OPEN_CHOICES.items():
        print(f"  {key}: {text}")


def _checked(parse):
    """An argparse type from ``parse``, whose ValueError argparse then reports as its own."""
    @functools.wraps(parse)
    def parse_argument(text: str):
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return parse_argument


@_checked
def _dataset_name(text: str) -> str:
    check_dataset_options(text, {})
    return text


@_checked
def _preset_name(text: str) -> str:
    return get_preset(text).name


_dataset_option, _run_spec = _checked(parse_option), _checked(RunSpec.parse)


def _add_train(commands) -> None:
    """``train``: its flags are the training settings' own."""
    parser = commands.add_parser(
        "train", help="train ViT-Small with DINO",
        description="Train ViT-Small with DINO (--objective supervised: the same backbone with labels, as a control). "
                    "For several GPUs: torchrun --nproc_per_node=N -m ib_tutorial train ...")
    parser.add_argument("--dataset", required=True, type=_dataset_name, help="dataset name, e.g. synthetic-objects, cifar100")
    parser.add_argument("--preset", type=_preset_name, help=f"settings tier (default: ${ENV_VAR}, else ci)")
    parser.add_argument("--out", help="run directory (default: <data root>/runs/<dataset>-<preset>)")
    parser.add_argument("--resume", action="store_true", help="continue from the run directory's last checkpoint")
    parser.add_argument("--root", help="data folder (default: $IB_TUTORIAL_DATA)")
    parser.add_argument("--download", action="store_true", help="download the dataset if it is missing")
    parser.add_argument("--dataset-option", action="append", type=_dataset_option, default=[], metavar="KEY=VALUE",
                        help="extra dataset argument, e.g. texture_weight=0.5 (repeatable)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    overrides = parser.add_argument_group("overrides", "any training or view setting; unset ones come from the preset")
    for name, kind in training_overrides().items():
        # Unset options are absent (not None), so that `--train-images none` sets None.
        overrides.add_argument(option(name), dest=name, type=value_parser(kind), default=argparse.SUPPRESS,
                               metavar=name.upper())
    parser.set_defaults(func=_train)


def _train(args: argparse.Namespace) -> None:
    overrides = {name: getattr(args, name) for name in training_overrides() if hasattr(args, name)}
    try:
        path = train(
            args.dataset, args.preset, out=args.out, resume=args.resume, root=args.root, download=args.download,
            dataset_options=dict(args.dataset_option), progress=not args.no_progress, **overrides)
    except TrainingStopped as stopped:
        _stop(stopped)
    if os.environ.get("RANK", "0") == "0":
        print(f"run written to {path}")


def _stop(stopped: TrainingStopped, also: str = "") -> None:
    """Print how to resume a run stopped by a signal, and exit with the shell's code for that signal."""
    if os.environ.get("RANK", "0") == "0":
        print(f"{stopped}{also}", file=sys.stderr)
    raise SystemExit(128 + stopped.signal_number)


def _show_datasets(args: argparse.Namespace) -> None:
    root = data_root(args.root)
    if args.root is not None and not root.is_dir():
        raise SystemExit(f"error: --root {args.root}: no such folder. Give --root the folder that holds the "
                         f"datasets, or leave it out to look in {display_path(data_root())}.")
    for name, info in DATASETS.items():
        print(f"{name:19s} {info.kind:16s} splits: {', '.join(info.splits):16s} {info.description}")
    print(f"\nOn disk under {root} (set {DATA_ENV_VAR} or --root to look elsewhere):")
    for name in (name for name in DATASETS if not name.startswith("synthetic")):
        options = options_on_disk(name, root)
        held_out = held_out_split(name, options)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            train, _ = dataset_on_disk(name, "train", root, **options)
            evaluation, _ = dataset_on_disk(name, held_out, root, **options) if train is not None else (None, "")
        if evaluation is None:
            print(f"  {name:17s} not found")
            continue
        messages = dict.fromkeys(str(w.message) for w in caught)  # once each, in order
        note = "".join(f"\n  {'':17s} warning: {message}" for message in messages)
        how = "".join(f" --dataset-option {key}={value}" for key, value in options.items())
        print(f"  {name:17s} {len(train.classes)} classes, {len(train):,} train / {len(evaluation):,} {held_out}"
              f"{'  (' + how.strip() + ')' if how else ''}{note}")
    print("Fetch a missing one with --download on the command that reads it, e.g. "
          "`ib-tutorial train --dataset uc-merced --download`.")


def _information_plane(args: argparse.Namespace) -> None:
    preset = get_preset(args.preset)
    print(f"preset {preset.name}: {preset.ib}")
    experiments = saved_information_experiment(preset.ib, tuple(args.activation))
    for experiment in experiments.values():
        print("\n" + experiment.compression_report())
    if args.out is not None:
        summaries = {name: experiment.summary() for name, experiment in experiments.items()}
        write_json_atomic(args.out, {"preset": preset.name, "runs": summaries})
        print(f"\nwrote {args.out}")


def _profile(args: argparse.Namespace) -> None:
    paths = profile_run(args.run_dir, tokens=args.tokens, center=not args.uncentred, images=args.images,
                        root=args.root, download=args.download, progress=not args.no_progress)
    n_eff, dim = raw_patch_eed(args.run_dir, images=args.images, root=args.root, download=args.download)
    print(f"{len(paths)} profiles in {paths[0].parent}" if paths else f"no saved backbones in {args.run_dir}")
    print(f"raw patches: the profile images' pixel patches have N_eff {n_eff:.1f} of {dim} dimensions "
          f"(EED {100 * n_eff / dim:.1f} %), a reference for block 0, not a bound on it")


def _measure(args: argparse.Namespace) -> None:
    path = measure_run(args.run_dir, args.epoch, images=args.images, measured=[DEFAULT] if args.default_only else None,
                       replicates=args.replicates, root=args.root, download=args.download,
                       progress=not args.no_progress)
    result = MeasurementResult.load(path)
    print(controls_table([result]))
    print(variants_table([result]))
    print(f"every number, with the bootstrap's replicates: {path}")


def _prune(args: argparse.Namespace) -> None:
    path = prune_run(args.run_dir, epoch=args.epoch, pool=args.pool, root=args.root, download=args.download)
    record = read_json(path)
    print(f"{path}: per block, the fewest principal directions that keep {record['keep_fraction']:.0%} of the "
          f"k-NN accuracy ({record['pool']} pooling), beside N_eff")
    for block in record["blocks"]:
        print(f"  L{block['block']:<2d} k = {block['sufficient_k']:4d}  N_eff = {block['n_eff']:6.1f}  "
              f"unpruned top-1 {block['unpruned']:5.1f} %")


def _factors(args: argparse.Namespace) -> None:
    path = measure_factors(args.run_dir, args.epochs, root=args.root, download=args.download, progress=not args.no_progress)
    record = read_json(path)
    names = list(record["thresholds"])
    print(f"{path}: k-NN top-1 (%) of the class and of each factor's median split, on {record['held_out']:,} "
          "held-out images")
    print("| epoch | pool | class | " + " | ".join(names) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in names) + " |")
    print("| chance | | | " + " | ".join(f"{record['chance'][name]:.1f}" for name in names) + " |")
    for epoch, pools in record["epochs"].items():
        for pool, accuracy in pools.items():
            print(f"| {epoch} | {pool} | {accuracy['class']:.1f} | " + " | ".join(f"{accuracy[name]:.1f}" for name in names) + " |")
    if record["constant"]:
        print(f"constant over the images, not split: {', '.join(record['constant'])}")


def _model_weights(text: str) -> tuple[str, Path]:
    """``MODEL=FILE`` -> ``(MODEL, FILE)``."""
    model, sep, file = text.partition("=")
    if not sep or not model or not file:
        raise argparse.ArgumentTypeError(f"expected MODEL=FILE, got {text!r}")
    return model, Path(file)


def _reproduce(args: argparse.Namespace) -> None:
    weights = dict(args.weights or [])
    if unknown := sorted(set(weights) - set(args.pretrained)):
        raise SystemExit(f"error: --weights names {', '.join(unknown)}, which --pretrained does not list")
    try:
        out = reproduce(args.preset, datasets=args.datasets, out=args.out, root=args.root, download=args.download,
                        progress=not args.no_progress, pretrained_control=args.pretrained_control,
                        pretrained=args.pretrained, weights=weights)
    except TrainingStopped as stopped:
        _stop(stopped, "\nor run this `ib-tutorial reproduce` command again: it resumes the run, then profiles.")
    print(write_comparison_table(out).read_text())
    print(f"results in {out}")
    if args.export is not None:
        dest = export_bundle(out, args.export, allow_dirty=args.allow_dirty)
        print(f"summary, table, settings, metrics and profiles copied to {dest}")


def _profile_published(args: argparse.Namespace) -> None:
    if args.weights is not None and len(args.models) > 1:
        raise SystemExit("error: --weights is the file of one model; give one MODEL with it")
    out = args.out or converged_folder(args.root)
    for name in args.models:
        paths = profile_published(name, args.dataset, out, weights=args.weights,
                                  preset=args.preset, images=args.images, root=args.root, download=args.download,
                                  progress=not args.no_progress, img_size=args.img_size)
        pruned = prune_published(name, args.dataset, out, weights=args.weights,
                                 preset=args.preset, root=args.root, download=args.download,
                                 img_size=args.img_size) if args.prune else None
        eed = " ".join(f"{value:.1f}" for value in load_profile_record(paths[0]).profile.eed_percent)
        print(f"{name} on {args.dataset}: EED% per block (all tokens, centred) {eed}")
        print(f"  {len(paths)} profiles in {paths[0].parent}")
        if pruned is not None:
            print(f"  pruning curves in {pruned}")


def _add_profile_published(commands) -> argparse.ArgumentParser:
    published = commands.add_parser(
        "profile-pretrained", help="per-block EED of published, converged ViTs (timm) on a dataset",
        description="Profile each timm MODEL with its published weights on the dataset's held-out profile images, "
        "every measurement; write <out>/<dataset>/<model>/profiles/*.json. "
        f"Converged ViT-S networks: {' '.join(PUBLISHED_VIT_SMALL)}.")
    published.add_argument("models", nargs="+", metavar="MODEL", help="timm model names, e.g. vit_small_patch16_224.dino")
    published.add_argument("--dataset", required=True, type=_run_spec, help="NAME[:KEY=VALUE,...], e.g. tiny-imagenet or dtd:folder=dtd")
    published.add_argument("--weights", type=Path, help="a local state dict of the one MODEL (default: the hub)")
    published.add_argument("--preset", type=_preset_name, help=f"whose images and device (default: ${ENV_VAR})")
    published.add_argument("--images", type=int, help="profile images (default: the preset's)")
    published.add_argument("--img-size", type=int, help="input side in pixels (default: the model's published one)")
    published.add_argument("--out", type=Path, help="results folder (default: <data root>/converged, the chapter's)")
    published.add_argument("--prune", action="store_true",
                           help="also prune each model spectrally, into <out>/<dataset>/<model>/pruning/mean.json")
    published.set_defaults(func=_profile_published)
    return published


def build_parser() -> argparse.ArgumentParser:
    """The parser of every ``ib-tutorial`` command."""
    parser = argparse.ArgumentParser(prog="ib-tutorial", description="Measure how ViTs compress information.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("presets", help="list the named settings").set_defaults(func=_show_presets)
    _add_train(commands)
    _add_data_commands(commands)
    _add_infoplane(commands)
    for command in _add_run_commands(commands) + [_add_reproduce(commands), _add_profile_published(commands)]:
        command.add_argument("--root", help="data folder (default: $IB_TUTORIAL_DATA)")
        command.add_argument("--download", action="store_true", help="download datasets that are missing")
        command.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser


def _add_data_commands(commands) -> None:
    # Its own parser (ib_tutorial.data.subsets.main) reads the rest, `--help` included.
    subset = commands.add_parser("subset", add_help=False, prefix_chars="\0",
                                 help="the named subsets of the real datasets: list, build from the full download, check")
    subset.add_argument("words", nargs=argparse.REMAINDER)
    subset.set_defaults(func=lambda args: subsets.main(args.words, prog="ib-tutorial subset"))
    datasets = commands.add_parser("datasets", help="list the datasets get_dataset knows, and those on disk")
    datasets.add_argument("--root", help="data folder (default: $IB_TUTORIAL_DATA)")
    datasets.set_defaults(func=_show_datasets)


def _add_infoplane(commands) -> None:
    infoplane = commands.add_parser(
        "infoplane",
        help="train the Information Bottleneck toy network and report each layer's compression",
        description="Train the 12-10-7-5-4-3-2 network on the 12-bit task, estimate every layer's information "
        "plane by binning and by the KDE bound, and print each layer's peak and final I(X;T).")
    infoplane.add_argument("--preset", type=_preset_name, help=f"preset name (default: ${ENV_VAR}, else ci)")
    infoplane.add_argument("--activation", nargs="+", default=["tanh", "relu"], choices=["tanh", "relu"])
    infoplane.add_argument("--out", type=Path, help="also write the planes, accuracies and EED as JSON here")
    infoplane.set_defaults(func=_information_plane)


def _add_run_commands(commands) -> list[argparse.ArgumentParser]:
    """Commands on a saved run (their common flags: :func:`build_parser`)."""
    profile = commands.add_parser(
        "profile", help="per-block EED of every saved checkpoint of a run",
        description="Measure every saved teacher of RUN_DIR on a seeded held-out image set; write "
        "profiles/<epoch>.json (other variants: profiles/<variant>/).")
    profile.add_argument("--tokens", choices=TOKEN_CHOICES, default="all", help="tokens that feed the metric (default all)")
    profile.add_argument("--uncentred", action="store_true", help="use H^T H / N instead of the centred covariance")
    profile.add_argument("--images", type=int, help="profile images (default: the run preset's)")
    measure = commands.add_parser(
        "measure", help="one saved network on its images and on controls, measured every way, with intervals",
        description="Measure the teacher RUN_DIR saved at --epoch (0: its initialisation) on the run's profile "
        "images and on two controls (phase-scrambled, noise), every measurement with a bootstrap over the images; "
        "write measurement/<epoch>.json in RUN_DIR.")
    measure.add_argument("--epoch", type=int, help="the saved teacher to measure (default: the last)")
    measure.add_argument("--images", type=int, default=MEASUREMENT_IMAGES,
                         help=f"profile images (default {MEASUREMENT_IMAGES}; another number writes "
                              "measurement/<epoch>-<images>-images.json beside the default's)")
    measure.add_argument("--replicates", type=int, default=MEASUREMENT_REPLICATES, help="bootstrap replicates")
    measure.add_argument("--default-only", action="store_true", help="the default measurement only")
    prune = commands.add_parser(
        "prune", help="k-NN accuracy of each block pruned to its top k principal directions",
        description="For one saved teacher of RUN_DIR, the k-NN accuracy of each block's pooled features pruned "
        "to its top k principal directions, k from 1 to D; write pruning/<pool>-<epoch>.json.")
    prune.add_argument("--epoch", type=int, help="the saved teacher to prune (default: the last)")
    prune.add_argument("--pool", choices=PRUNING_POOLS, default="mean", help="mean patch token (default) or CLS token")
    factors = commands.add_parser(
        "factors", help="what a run's networks learned besides the class, on a synthetic world with objects",
        description="For the saved teachers of RUN_DIR, the k-NN accuracy of the class and of the median split of "
        "each other factor the world draws (hue, size, ...), from the CLS and mean patch tokens; write factors.json.")
    factors.add_argument("--epochs", type=int, nargs="+", help="saved teachers to measure (default: all)")
    for command, func in ((profile, _profile), (measure, _measure), (prune, _prune), (factors, _factors)):
        command.add_argument("run_dir", type=Path, help="a directory written by `ib-tutorial train`")
        command.set_defaults(func=func)
    return [profile, measure, prune, factors]


def _add_reproduce(commands) -> argparse.ArgumentParser:
    reproduce = commands.add_parser(
        "reproduce", help="train and profile each dataset, then compare with the paper",
        description="Train (or resume) and profile each dataset, then write summary.json and comparison.md. "
        "Finished work is skipped, so the command can be rerun after an interruption.")
    reproduce.add_argument("--preset", type=_preset_name, help=f"settings tier (default: ${ENV_VAR}, else ci)")
    reproduce.add_argument("--datasets", nargs="+", default=[RunSpec.parse(spec) for spec in PAPER_DATASETS], type=_run_spec,
                           metavar="NAME[:KEY=VALUE,...][@SETTING=VALUE,...]",
                           help=f"default: {' '.join(PAPER_DATASETS)}; also {' '.join(EXTRA_DATASETS)}; "
                           "options after a colon, e.g. synthetic-mix:texture_weight=0.25; training settings of "
                           "this run after @, e.g. tiny-imagenet@objective=supervised or tiny-imagenet@arch=vit_small")
    reproduce.add_argument("--out", type=Path, help="results folder (default: <data root>/reproduce/<preset>)")
    reproduce.add_argument("--pretrained-control", action="store_true", help="also profile timm's DINO ViT-S/16")
    reproduce.add_argument("--pretrained", nargs="+", default=[], metavar="MODEL",
                           help="also profile these published timm models on every dataset, every measurement "
                           f"(e.g. {PUBLISHED_VIT_SMALL[0]}; weights from the hub, or --weights)")
    reproduce.add_argument("--weights", action="append", type=_model_weights, metavar="MODEL=FILE",
                           help="a local state dict of one --pretrained MODEL (repeatable)")
    reproduce.add_argument("--export", type=Path, metavar="DEST",
                           help="also copy everything but checkpoints and weights to DEST (e.g. results/laptop-real)")
    reproduce.add_argument("--allow-dirty", action="store_true", help="export even profiles of uncommitted code")
    reproduce.set_defaults(func=_reproduce)
    return reproduce


def main(argv: list[str] | None = None) -> None:
    """Run one ``ib-tutorial`` command. A mistake in what it was given, or a path the system
    refuses, ends it with a message naming the argument and the fix (exit code 1), not a traceback."""
    with spoken_as_options(), warnings.catch_warnings():
        warnings.showwarning = _show_warning
        # Once per place per command: a new filter also forgets what earlier calls in this process showed.
        warnings.simplefilter("default")
        args = build_parser().parse_args(argv)
        keep_freed_memory()  # every command here runs forward passes, batch after batch
        try:
            args.func(args)
        except USER_ERRORS as error:
            if isinstance(error, ValueError) and not _raised_by_package(error):
                raise  # a library's ValueError is a bug to report, with its traceback
            raise SystemExit(f"error: {_message(error, args)}") from None
        except KeyboardInterrupt as stopped:  # Ctrl-C outside training, which checkpoints on its own
            print(f"stopped ({str(stopped) or 'Ctrl-C'}): every file written before the stop is complete (each is "
                  "written whole); the one under way was not written. Run the command again to make it.",
                  file=sys.stderr)
            raise SystemExit(130) from None


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line, ``warning: ...``, without the source line Python shows."""
    print(f"warning: {message}", file=sys.stderr if file is None else file)


def _raised_by_package(error: BaseException) -> bool:
    """Whether the innermost frame of ``error``'s traceback is this package's code."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and Path(frames[-1].filename).resolve().is_relative_to(PACKAGE)


def _message(error: BaseException, args: argparse.Namespace) -> str:
    """``error``'s message; for a path the system refused, the argument it came from and what to do."""
    if not isinstance(error, OSError) or error.filename is None:
        message = error.strerror if isinstance(error, OSError) and error.strerror else str(error)  # no "[Errno 28]"
        return message or type(error).__name__
    path = Path(error.filename)
    given = [(words, getattr(args, name)) for name, words in PATH_ARGUMENTS.items() if getattr(args, name, None)]
    inside = [(words, value) for words, value in given
              if path.expanduser().absolute().is_relative_to(Path(value).expanduser().absolute())]
    words, value = inside[0] if inside else (None, None)
    where = f"{words} {value}: " if words else ""
    problem = f"{where}{error.strerror} ({error.filename})"
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{problem}. Choose a folder you may write to{' with ' + words if words else ''}, or change its permissions."
    if error.errno in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
        return f"{problem}: a file stands where a folder should, or the other way round. Choose another path."
    return f"{problem}."


if __name__ == "__main__":
    main()
