r"""Where does the label live? Linear probes on two kinds of cue.

:func:`global_colour_statistics` (per-channel mean, standard deviation and 10/50/90 % quantiles,
blind to where anything is) and :func:`local_patch_spectrum` (the log power spectrum of one
small, fixed, contrast-normalised grey patch, blind to everything outside it) each feed a
linear probe (:func:`ridge_probe_accuracy`). On ``synthetic-objects`` neither should beat
chance by much; on ``synthetic-textures`` the patch should. :func:`cue_accuracies` sweeps the
``texture_weight`` knob of ``synthetic-mix``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from tqdm.auto import tqdm

from .synthetic import SyntheticWorld

QUANTILES = (0.1, 0.5, 0.9)


def global_colour_statistics(image: np.ndarray) -> np.ndarray:
    """The mean, standard deviation and 10/50/90 % quantiles of each channel, in [0, 1], of a
    ``uint8`` image ``(H, W, 3)``: 15 features."""
    pixels = image.reshape(-1, 3).astype(np.float64) / 255
    return np.concatenate([pixels.mean(0), pixels.std(0), np.quantile(pixels, QUANTILES, axis=0).ravel()])


def local_patch_spectrum(image: np.ndarray, patch: int = 8) -> np.ndarray:
    r"""Features of shape ``(patch * (patch // 2 + 1),)``: :math:`\log(|\mathcal F g|^2 + 10^{-3})`
    of the top-left ``patch`` x ``patch`` grey patch :math:`g`, standardised to zero
    mean and unit variance (so brightness and contrast, hence colour, do not count)."""
    grey = image[:patch, :patch].astype(np.float64).mean(-1)
    grey = (grey - grey.mean()) / (grey.std() + 1e-6)
    return np.log(np.abs(np.fft.rfft2(grey)) ** 2 + 1e-3).ravel()


def ridge_probe_accuracy(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, test_y: np.ndarray,
                         ridge: float = 1e-2) -> float:
    r"""Test accuracy of a ridge-regression classifier: features standardised with the
    training statistics, plus a bias, :math:`W = (X^\top X + \lambda N I)^{-1} X^\top Y`
    for one-hot :math:`Y`; the prediction is :math:`\arg\max_c (xW)_c`."""
    mean, std = train_x.mean(0), train_x.std(0) + 1e-8

    def design(x: np.ndarray) -> np.ndarray:
        return np.hstack([(x - mean) / std, np.ones((len(x), 1))])

    x = design(train_x)
    targets = np.eye(int(train_y.max()) + 1)[train_y]
    weights = np.linalg.solve(x.T @ x + ridge * len(x) * np.eye(x.shape[1]), x.T @ targets)
    return float(np.mean(np.argmax(design(test_x) @ weights, axis=1) == test_y))


def probe(train: SyntheticWorld, test: SyntheticWorld, features: Callable[[np.ndarray], np.ndarray]) -> float:
    """Accuracy of a ridge probe on ``features`` of ``train``'s images, tested on ``test``'s."""
    train_x = np.stack([features(train.image_array(i)) for i in range(len(train))])
    test_x = np.stack([features(test.image_array(i)) for i in range(len(test))])
    return ridge_probe_accuracy(train_x, np.array(train.targets), test_x, np.array(test.targets))


def cue_accuracies(texture_weights: Sequence[float], img_size: int = 32, num_classes: int = 5, train_size: int = 500,
                   test_size: int = 500, seed: int = 0) -> dict[str, list[float]]:
    """For each ``texture_weight`` of ``synthetic-mix``: the probe accuracy from global
    colour statistics and from one local patch (train split to fit, val to test)."""
    results: dict[str, list[float]] = {"global colour statistics": [], "local 8x8 patch": []}
    for weight in tqdm(texture_weights, desc="texture_weight"):
        options = {"img_size": img_size, "num_classes": num_classes, "seed": seed, "texture_weight": weight}
        train = SyntheticWorld("train", size=train_size, **options)
        test = SyntheticWorld("val", size=test_size, **options)
        results["global colour statistics"].append(probe(train, test, global_colour_statistics))
        results["local 8x8 patch"].append(probe(train, test, local_patch_spectrum))
    return results
