r"""Uncertainty of a profile: the bootstrap over images, and the Wilson interval of an accuracy.

A replicate draws the images again with replacement: every covariance of
:mod:`~ib_tutorial.measure.variants` is a function of sums over images, so it is the same sums
weighted by multinomial counts :math:`w \sim \mathrm{Mult}(N; 1/N, \dots, 1/N)`, with no second
pass over the network. Images, not tokens, are resampled: the tokens of one image are not
independent, and resampling them would give intervals far too narrow.

**Memory.** :class:`ImageStatistics` keeps at most :math:`K` groups of sums (``groups``, by
default as many as ``max_bytes`` allows): image :math:`j < K` has a group of its own, every
later one joins a random group, a cluster bootstrap, still valid but coarser: keep :math:`K \ge 100`.
:func:`bootstrap_blocks` makes one forward pass per token choice, not one for all: per-image
Gram matrices of every block for every choice would not fit at :math:`D = 384`.

**Intervals.** With :math:`\hat\theta` the measured statistic and :math:`q_a` its replicates'
quantiles, at ``level`` :math:`1 - 2\alpha`: *basic*
:math:`[2\hat\theta - q_{1-\alpha},\ 2\hat\theta - q_\alpha]` (the default) or *percentile*
:math:`[q_\alpha, q_{1-\alpha}]`. :math:`N_\mathrm{eff}` of a sample is biased low, a replicate
lower still; the basic interval corrects that to first order (400 images in 32 dimensions: the
true value in 96 of 100 basic 90 % intervals, in no percentile one), so a measured value can lie
above its basic interval (:attr:`BootstrapProfile.bias`).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import torch
from torch.utils.data import DataLoader, Dataset

from .block_profile import image_batches, recording_blocks, select_tokens
from .metrics import eed_percent, effective_dimension_from_spectrum
from .shape import DIRECTIONS, ProfileShape, Verdict, classify_shape, middle_is_lowest, verdict
from .variants import IMAGE_OUTER, POSITIONS, TokenMoments, get_variant, needed_sums, next_norms


Tensor = torch.Tensor

#: Bytes the per-group sums of one :class:`ImageStatistics` may take by default (at
#: :math:`D = 384`, 113 groups of Gram matrices, 1.4 GB for 12 blocks).
MAX_BYTES = 128 * 2**20
#: Replicates of a bootstrap, and the level of its intervals, by default.
REPLICATES, LEVEL = 1000, 0.9
# Per-image Gram matrices of at most this many bytes are formed at once in an update, and
# replicates' weighted sums of at most this many in a bootstrap.
_WORK_BYTES = 2**27


class ImageStatistics:
    r"""Per-group sums of one block's tokens in float64, those of
    :class:`~ib_tutorial.measure.variants.TokenMoments` with the optional ones ``keep`` names.

    The shift :math:`c`, the first batch's mean token, keeps the sums far from cancelling.
    ``groups`` is the most groups kept (default: as many as ``max_bytes`` holds); ``seed`` draws
    the group each later image joins; ``expected_images``, when known, sizes the storage once.
    """

    def __init__(self, dim: int, keep: Iterable[str] = (), groups: int | None = None,
                 max_bytes: int = MAX_BYTES, seed: int = 0, expected_images: int = 0):
        self.keep = frozenset(keep)
        if unknown := self.keep - {POSITIONS, IMAGE_OUTER}:
            raise ValueError(f"unknown sums to keep {sorted(unknown)}; choose from {POSITIONS!r}, {IMAGE_OUTER!r}")
        if dim < 1 or (groups is not None and groups < 1):
            raise ValueError(f"the width and the number of groups must be at least 1, got {dim} and {groups}")
        self.dim, self.max_groups, self.max_bytes, self.expected_images = dim, groups, max_bytes, expected_images
        self.images = 0
        self.groups = 0  # groups holding images so far
        self.tokens: int | None = None
        self._generator = torch.Generator().manual_seed(seed)
        self._shift: Tensor | None = None
        self._sums: dict[str, Tensor] = {}  # storage for some groups, of which the first `groups` are used
        self._copied: tuple = (None, {})  # (device, images) and the sums copied there

    def update(self, tokens: Tensor) -> None:
        """Add a batch of images' tokens [B, T, D] (any float dtype and device; the same T every batch)."""
        if tokens.ndim != 3 or tokens.shape[-1] != self.dim:
            raise ValueError(f"expected tokens [B, T, {self.dim}], got shape {tuple(tokens.shape)}")
        batch, count = tokens.shape[:2]
        if batch == 0:
            return
        x = tokens.detach().to(torch.float64)
        if not torch.isfinite(x).all():
            raise ValueError("tokens contain NaN or inf; check the model output or the input images")
        if self.tokens is None:
            optional = {POSITIONS: (count, self.dim), IMAGE_OUTER: (self.dim, self.dim)}
            shapes = {"images": (), "total": (self.dim,), "gram": (self.dim, self.dim)}
            shapes |= {name: optional[name] for name in self.keep}
            if self.max_groups is None:
                self.max_groups = max(1, self.max_bytes // (8 * sum(math.prod(shape) for shape in shapes.values())))
            capacity = min(self.max_groups, self.expected_images)
            self._sums = {name: torch.zeros(capacity, *shape, dtype=torch.float64) for name, shape in shapes.items()}
            self.tokens, self._shift = count, x.mean((0, 1))
        elif count != self.tokens:
            raise ValueError(f"every image must have the same number of tokens: {self.tokens} before, {count} now")
        x = x - self._shift.to(x.device)
        ids = self._assign(batch)
        sums = x.sum(1)
        self._add("images", ids, torch.ones(batch, dtype=torch.float64))
        self._add("total", ids, sums)
        chunk = max(1, _WORK_BYTES // (8 * self.dim**2))
        for start in range(0, batch, chunk):
            piece = x[start : start + chunk]
            self._add("gram", ids[start : start + chunk], torch.bmm(piece.transpose(1, 2), piece))
        if POSITIONS in self.keep:
            self._add(POSITIONS, ids, x)
        if IMAGE_OUTER in self.keep:
            self._add(IMAGE_OUTER, ids, sums[:, :, None] * sums[:, None, :])
        self.images += batch

    def _assign(self, batch: int) -> Tensor:
        """Groups of the next ``batch`` images: a new group each up to ``max_groups``, then
        groups drawn at random."""
        first = torch.arange(self.images, self.images + batch)
        drawn = torch.randint(self.max_groups, (batch,), generator=self._generator)
        ids = torch.where(first < self.max_groups, first, drawn)
        needed = max(self.groups, int(ids.max()) + 1)
        if needed > len(self._sums["images"]):
            # Grow the storage geometrically: one copy per doubling, not one per batch.
            capacity = min(self.max_groups, max(needed, 2 * len(self._sums["images"])))
            self._sums = {name: torch.cat([s, s.new_zeros(capacity - len(s), *s.shape[1:])])
                          for name, s in self._sums.items()}
        self.groups = needed
        return ids

    def _add(self, name: str, ids: Tensor, values: Tensor) -> None:
        self._sums[name].index_add_(0, ids, values.cpu())

    def moments(self, weights: Tensor | None = None) -> TokenMoments:
        r"""The sums over groups weighted by ``weights`` [..., K] (K = ``groups``; default
        all ones: the images themselves), with the leading shape of ``weights``."""
        if not self.images:
            raise ValueError("no images accumulated yet")
        if weights is None:
            weights = torch.ones(self.groups, dtype=torch.float64)
        if weights.shape[-1] != self.groups:
            raise ValueError(f"expected weights [..., {self.groups}], got shape {tuple(weights.shape)}")
        weights = weights.to(torch.float64)
        # A copy of the sums on the weights' device is kept while no image is added, so a
        # bootstrap's chunks of replicates copy them once.
        key = (weights.device, self.images)
        if self._copied[0] != key:
            self._copied = (key, {name: s[: self.groups].to(weights.device) for name, s in self._sums.items()})
        weighted = {name: torch.tensordot(weights, s, dims=1) for name, s in self._copied[1].items()}
        return TokenMoments(weighted["images"], self.tokens, weighted["total"], weighted["gram"],
                            weighted.get(POSITIONS), weighted.get(IMAGE_OUTER))

    def group_images(self) -> Tensor:
        """The number of images in each group [K]."""
        return self._sums["images"][: self.groups].clone()


def resampling_weights(groups: int, replicates: int, seed: int) -> Tensor:
    r"""Multinomial counts [replicates, groups] (float64), each row
    :math:`w \sim \mathrm{Mult}(K; 1/K, \dots, 1/K)`; a fixed function of ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    draws = torch.randint(groups, (replicates, groups), generator=generator)
    counts = torch.zeros(replicates, groups, dtype=torch.float64)
    return counts.scatter_add_(1, draws, torch.ones_like(counts))


@dataclass(frozen=True)
class Interval:
    """An estimate and its interval at ``level`` (a share, e.g. 0.9)."""

    estimate: float
    low: float
    high: float
    level: float

    def verdict(self, margin: float = DIRECTIONS) -> Verdict:
        """Whether the statistic exceeds ``margin``: see :func:`~ib_tutorial.measure.shape.verdict`."""
        return verdict(self.low, self.high, margin)


#: The bootstrap intervals :func:`bootstrap_interval` makes, the default first.
METHODS = ("basic", "percentile")


def bootstrap_interval(estimate: float, replicates: Tensor, level: float, method: str = METHODS[0]) -> Interval:
    r"""The interval at ``level`` of a statistic measured as ``estimate`` from its
    ``replicates`` [R], as the module docstring defines it (quantiles by linear interpolation)."""
    if not 0 < level < 1:
        raise ValueError(f"the level must lie between 0 and 1, got {level}")
    _check_method(method)
    tail = (1 - level) / 2
    quantiles = torch.tensor([tail, 1 - tail], dtype=torch.float64)
    low, high = torch.quantile(replicates.to(torch.float64), quantiles).tolist()
    if method == "basic":
        low, high = 2 * estimate - high, 2 * estimate - low
    return Interval(float(estimate), low, high, level)


@dataclass(frozen=True)
class StoredReplicates:
    r"""What a profile file keeps of its bootstrap: the replicates' :math:`N_\mathrm{eff}`
    [R][L], the variant and the resampling seed; the level and kind of an interval are chosen
    when it is read (:meth:`BootstrapProfile.from_stored`)."""

    variant: str
    seed: int
    n_eff: list[list[float]] = field(metadata={"schema": {"minItems": 1}})


@dataclass(frozen=True)
class BootstrapProfile:
    r"""A profile's :math:`N_\mathrm{eff}` per block (all images once) and its bootstrap
    ``replicates`` [R, L], every block of a replicate on the same resampled images; ``dim`` is
    D, ``method`` one of :data:`METHODS`, ``variant`` a key of
    :data:`~ib_tutorial.measure.variants.VARIANTS`, ``seed`` that of the resampling weights."""

    n_eff: list[float]
    replicates: Tensor
    dim: int
    level: float
    method: str
    variant: str
    seed: int

    @property
    def eed_percent(self) -> list[float]:
        """EED% of each block."""
        return [eed_percent(n, self.dim) for n in self.n_eff]

    @property
    def bias(self) -> list[float]:
        """Each block's bootstrap bias, the replicates' mean less the measured value; one
        comparable to the interval's width says the images are too few for the width."""
        return (self.replicates.mean(0) - torch.tensor(self.n_eff, dtype=torch.float64)).tolist()

    def shape_shares(self, tolerance: float = DIRECTIONS) -> dict[ProfileShape, float]:
        """The share of replicates :func:`~ib_tutorial.measure.shape.classify_shape` gives each
        shape (shapes no replicate has left out), the replicates reflected as the basic
        intervals reflect them: how firmly the images fix the profile's shape."""
        shapes = [classify_shape(row, tolerance) for row in self._read_replicates()]
        return {shape: shapes.count(shape) / len(shapes) for shape in ProfileShape if shape in shapes}

    def middle_minimum_share(self) -> float:
        """The share of replicates, read as :meth:`shape_shares` reads them, whose lowest block
        is a middle one (:func:`~ib_tutorial.measure.shape.middle_is_lowest`)."""
        rows = self._read_replicates()
        return sum(middle_is_lowest(row) for row in rows) / len(rows)

    def _read_replicates(self) -> list[list[float]]:
        r"""The replicates as the intervals read them: for the basic method reflected, :math:`2\hat v - v^*`."""
        rows = self.replicates
        if self.method == "basic":
            rows = 2 * torch.tensor(self.n_eff, dtype=torch.float64) - rows
        return rows.tolist()

    def stored(self, decimals: int = 4) -> StoredReplicates:
        """The replicates as a profile file keeps them (to ``decimals`` places, far below any interval's width)."""
        return StoredReplicates(self.variant, self.seed,
                                [[round(value, decimals) for value in row] for row in self.replicates.tolist()])

    @classmethod
    def from_stored(cls, n_eff: Sequence[float], dim: int, stored: StoredReplicates, level: float = LEVEL,
                    method: str = METHODS[0]) -> BootstrapProfile:
        """The bootstrap of a stored profile, read at ``level`` with ``method``."""
        _check_method(method)
        replicates = torch.tensor(stored.n_eff, dtype=torch.float64)
        if replicates.ndim != 2 or replicates.shape[1] != len(n_eff):
            raise ValueError(f"stored replicates of shape {tuple(replicates.shape)} do not match "
                             f"a profile of {len(n_eff)} blocks")
        return cls(list(n_eff), replicates, dim, level, method, stored.variant, stored.seed)

    def intervals(self, percent: bool = False) -> list[Interval]:
        r"""Each block's interval, of :math:`N_\mathrm{eff}` or (``percent``) of EED%."""
        return [self.interval(lambda values, block=block: values[block], percent) for block in range(len(self.n_eff))]

    def interval(self, statistic: Callable[[Sequence[float]], float], percent: bool = False) -> Interval:
        """The interval of ``statistic``, a function of one value per block (e.g.
        :func:`~ib_tutorial.measure.shape.middle_dip`), as :meth:`intervals`."""
        return joint_interval(statistic, [self], percent)


def joint_interval(statistic: Callable[..., float], profiles: Sequence[BootstrapProfile], percent: bool = False,
                   level: float | None = None, method: str | None = None) -> Interval:
    """The interval of ``statistic(values_1, ..., values_k)``, one list of per-block values
    per profile, from replicate :math:`r` of every profile together: paired for profiles with
    the same ``seed`` on the same images in the same order, a valid draw of both for
    independent image sets. ``level`` and ``method`` default to the first profile's."""
    if len({profile.replicates.shape[0] for profile in profiles}) != 1:
        raise ValueError("the profiles have different numbers of replicates")
    scales = [100 / profile.dim if percent else 1.0 for profile in profiles]
    estimate = statistic(*[[value * scale for value in profile.n_eff] for profile, scale in zip(profiles, scales)])
    rows = zip(*[(profile.replicates * scale).tolist() for profile, scale in zip(profiles, scales)])
    values = torch.tensor([statistic(*row) for row in rows], dtype=torch.float64)
    return bootstrap_interval(estimate, values, profiles[0].level if level is None else level,
                              profiles[0].method if method is None else method)


def bootstrap_eed(statistics: Sequence[ImageStatistics], variant: str = "tokens", replicates: int = REPLICATES,
                  level: float = LEVEL, method: str = METHODS[0], seed: int = 0,
                  device: torch.device | str = "cpu") -> BootstrapProfile:
    r""":math:`N_\mathrm{eff}` of every block and its bootstrap replicates, from one
    :class:`ImageStatistics` per block, all fed the same images in the same order and keeping
    the sums ``variant`` needs. ``seed`` seeds the :func:`resampling_weights` every block
    shares; ``device`` runs the replicates' linear algebra (on one CPU core at
    :math:`D = 384`, 1,000 replicates of 12 blocks take about 5 minutes)."""
    if not statistics:
        raise ValueError("no blocks to bootstrap")
    _check_method(method)
    covariance = get_variant(variant).covariance
    sizes = statistics[0].group_images()
    if any(not torch.equal(s.group_images(), sizes) for s in statistics[1:]):
        raise ValueError("the blocks' statistics hold different images; feed every block the same batches")
    weights = resampling_weights(len(sizes), replicates, seed)
    chunk = max(1, _WORK_BYTES // (8 * statistics[0].dim ** 2))
    n_eff, columns = [], []
    for block in statistics:
        n_eff.append(_n_eff(covariance(block.moments()))[0])
        columns.append([n for rows in weights.split(chunk) for n in _n_eff(covariance(block.moments(rows.to(device))))])
    return BootstrapProfile(n_eff, torch.tensor(columns, dtype=torch.float64).T, statistics[0].dim, level, method,
                            variant, seed)


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise ValueError(f"unknown interval method {method!r}; choose from {', '.join(METHODS)}")


def _n_eff(covariances: Tensor) -> list[float]:
    r""":math:`N_\mathrm{eff}` of each covariance [..., D, D], flattened."""
    spectra = torch.linalg.eigvalsh(covariances.reshape(-1, *covariances.shape[-2:])).cpu()
    return [effective_dimension_from_spectrum(spectrum) for spectrum in spectra]


def wilson_interval(correct: int, total: int, level: float = 0.95) -> Interval:
    r"""The Wilson score interval of an accuracy ``correct / total`` (shares, not points):

    .. math::

        \frac{\hat p + \frac{z^2}{2n}}{1 + \frac{z^2}{n}} \pm
        \frac{z}{1 + \frac{z^2}{n}} \sqrt{\frac{\hat p (1 - \hat p)}{n} + \frac{z^2}{4n^2}},

    :math:`z` the standard normal's :math:`(1 + \mathrm{level})/2` quantile. Unlike
    :math:`\hat p \pm z \sqrt{\hat p(1 - \hat p)/n}` it stays inside [0, 1] and keeps its
    coverage near 0 and 1 (Brown, Cai & DasGupta 2001).
    """
    if total < 1 or not 0 <= correct <= total:
        raise ValueError(f"need 0 <= correct <= total and total >= 1, got {correct} of {total}")
    if not 0 < level < 1:
        raise ValueError(f"the level must lie between 0 and 1, got {level}")
    z = NormalDist().inv_cdf((1 + level) / 2)
    p, n = correct / total, total
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    # At 0 or n correct the bound is exactly 0 or 1; the formula leaves round-off there.
    return Interval(p, 0.0 if correct == 0 else centre - half, 1.0 if correct == total else centre + half, level)


Measurement = tuple[str, str]  # (variant, tokens)


@torch.no_grad()
def bootstrap_blocks(model: torch.nn.Module, dataset: Dataset, measured: Sequence[Measurement],
                     replicates: int = REPLICATES, level: float = LEVEL, seed: int = 0, batch_size: int = 64,
                     max_bytes: int = 16 * MAX_BYTES, device: torch.device | str = "cpu"
                     ) -> dict[Measurement, BootstrapProfile]:
    """Bootstrap profiles of a timm ViT's blocks on ``dataset`` (images, or ``(image, label)``
    items) for each ``(variant, tokens)`` of ``measured``: one forward pass per token choice
    feeds every block and every variant of that choice, through the next block's LayerNorm
    (:func:`~ib_tutorial.measure.variants.next_norms`) for ``post_ln``. One ``seed`` for every
    measurement, so those of one token choice share their replicates' images; ``max_bytes``
    is shared equally by the pass's :class:`ImageStatistics`."""
    by_tokens: dict[str, dict[bool, set[str]]] = {}
    for variant, tokens in measured:
        by_tokens.setdefault(tokens, {}).setdefault(get_variant(variant).layer_norm, set()).add(variant)
    prefix, norms = getattr(model, "num_prefix_tokens", 1), next_norms(model)
    profiles = {}
    for tokens, sources in by_tokens.items():
        share = max_bytes // (len(sources) * len(model.blocks))
        statistics = {layer_norm: [ImageStatistics(model.embed_dim, needed_sums(names), max_bytes=share, seed=seed,
                                                   expected_images=len(dataset)) for _ in model.blocks]
                      for layer_norm, names in sources.items()}

        def record(index: int, output: Tensor) -> None:
            normed = norms[index](output) if True in statistics else None
            for layer_norm, blocks in statistics.items():
                chosen = select_tokens(normed if layer_norm else output, tokens, prefix)
                blocks[index].update(chosen.reshape(output.shape[0], -1, output.shape[-1]))

        with recording_blocks(model, record):
            for images in image_batches(DataLoader(dataset, batch_size=batch_size)):
                model.forward_features(images.to(device))
        for layer_norm, names in sources.items():
            for variant in names:
                profiles[(variant, tokens)] = bootstrap_eed(statistics[layer_norm], variant, replicates, level,
                                                            seed=seed, device=device)
    return {measurement: profiles[measurement] for measurement in measured}
