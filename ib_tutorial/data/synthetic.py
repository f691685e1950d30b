r"""Synthetic object and texture worlds, generated on the fly.

The paper contrasts object-centric data (the label is a thing somewhere in the picture)
with texture-centric data (the label is a statistic every part of the picture shares).
These worlds isolate that difference, with nothing to download:

**Objects** (``texture_weight = 0``). Class :math:`k` is a closed outline with radius

.. math:: R_k(\theta) = \frac{1 + \sum_{m=2}^{5} a_{k,m}\cos(m\theta + \phi_{k,m})}
          {\sqrt{1 + \tfrac12 \sum_m a_{k,m}^2}}

(the area of the unit disc), at a random position and scale (equivalent radius 16-28 % of the
side) in a random colour over a class-independent cluttered background: only the outline
carries the class, and only where the object is.

**Textures** (``texture_weight = 1``). Class :math:`k` is a Gaussian random field whose power
spectrum is a log-normal ring around the class frequency :math:`f_k` (cycles per pixel),
optionally oriented around :math:`\theta_k`,

.. math:: |F_k(\rho, \varphi)| = \exp\!\Big(-\frac{\log^2(\rho/f_k)}{2\sigma^2}\Big)
          \,|\cos(\varphi - \theta_k)|^{n_k},

passed through :math:`\tanh(g_k t)` between a dark and a bright random colour: any patch a few
periods wide identifies the class.

**Between them** (``synthetic-mix``): the pixel blend :math:`(1-w)\,\text{object} +
w\,\text{texture}` of the same class, :math:`w` = ``texture_weight``. The layers use separate
random streams, so one ``(seed, index)`` shows the same object and texture at every :math:`w`.
``palette="grey"`` paints every image in the same greys (:data:`PALETTE_GREYS`).

Class :math:`k` is the same shape or texture whatever ``num_classes``, ``seed`` or split (class
parameters come from a low-discrepancy sequence). Image ``index`` of ``split`` is a pure
function of ``(seed, split, index, img_size, texture_weight)`` (a Philox stream keyed by
``(seed, split)``); its label is ``index % num_classes``.
"""
from __future__ import annotations

import colorsys
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.fft
import torch
from PIL import Image

SPLITS = ("train", "val", "test")
DEFAULT_SPLIT_SIZES = {"train": 10_000, "val": 2_000, "test": 2_000}
MIN_IMG_SIZE, MAX_IMG_SIZE = 16, 256

# Shape family: harmonics m = 2..5 (m = 1 would only move the centre) and the largest
# amplitude each may take; the sum stays below 1 so the radius stays positive.
HARMONICS = np.arange(2, 6)
MAX_AMPLITUDES = np.array([0.35, 0.25, 0.2, 0.15])
OBJECT_RADIUS_RANGE = (0.16, 0.28)  # equivalent radius, as a fraction of the side
MAX_OBJECT_SCALE = 1.75  # 0.28 x 1.75 = 0.49: the largest object still fits the image

# Texture family: class frequency range (cycles per pixel), orientation concentration
# exponents n (0: isotropic blobs, 4: loosely oriented, 16: stripes) and tanh gains g
# (soft or crisp). The ring width sigma is in natural-log units of frequency.
TEXTURE_FREQUENCY_RANGE = (0.05, 0.3)
TEXTURE_CONCENTRATIONS = (0, 4, 16)
TEXTURE_GAINS = (0.8, 4.0)
TEXTURE_RING_WIDTH = 0.3

BACKGROUND_GRIDS = ((3, 1.0), (6, 0.5))  # value-noise octaves: (cells per side, amplitude)
STROKES = 2
#: The names of :meth:`SyntheticWorld.object_factors`: what an object image draws besides its class.
OBJECT_FACTORS = ("object value", "object hue", "object radius", "object x", "object y", "background value")
STROKE_WIDTH_RANGE = (0.02, 0.05)  # fraction of the side
#: What ``palette`` takes: the random colours (the default), or the same greys for every image.
PALETTES = ("random", "grey")
#: The greys of ``palette="grey"`` (HSV values, no saturation): the middle of each colour's
#: drawn range, the object as bright as a bright object.
PALETTE_GREYS = {"object": 0.9, "background": 0.5, "stroke": 0.55, "texture dark": 0.2, "texture bright": 0.85}


def low_discrepancy_point(k: int, dims: int) -> np.ndarray:
    r"""Point :math:`k` of :math:`u_k = \{0.5 + k\,\alpha\}` in :math:`[0,1)^{dims}`,
    :math:`\alpha_j = \phi_d^{-j}` with :math:`\phi_d` the root of :math:`x^{d+1} = x + 1`
    (Roberts' generalised golden ratio): any prefix covers the cube evenly."""
    phi = 2.0
    for _ in range(64):
        phi = (1.0 + phi) ** (1.0 / (dims + 1))
    alpha = phi ** -np.arange(1, dims + 1)
    return (0.5 + k * alpha) % 1.0


@dataclass(frozen=True)
class ShapeClass:
    r"""One object class: amplitudes :math:`a_m` and phases :math:`\phi_m` of the
    harmonics :math:`m` = 2..5 of its outline."""

    amplitudes: np.ndarray  # (4,)
    phases: np.ndarray  # (4,)

    def radius(self, theta: np.ndarray) -> np.ndarray:
        r"""The outline radius :math:`R_k(\theta)`."""
        theta = np.asarray(theta)[..., None]
        wobble = np.sum(self.amplitudes * np.cos(HARMONICS * theta + self.phases), axis=-1)
        return (1.0 + wobble) / np.sqrt(1.0 + 0.5 * np.sum(self.amplitudes**2))


def shape_class(k: int) -> ShapeClass:
    """The shape of object class ``k``."""
    u = low_discrepancy_point(k, 2 * len(HARMONICS))
    return ShapeClass(MAX_AMPLITUDES * u[: len(HARMONICS)], 2 * np.pi * u[len(HARMONICS):])


@dataclass(frozen=True)
class TextureClass:
    """One texture class."""

    frequency: float  # cycles per pixel
    orientation: float  # of the wave vector, radians, in array coordinates (x right, y down)
    concentration: int  # orientation concentration exponent n
    gain: float  # tanh gain g

    @property
    def name(self) -> str:
        """E.g. ``striped 84deg 0.07c/px crisp``, the stripes' angle counter-clockwise from horizontal."""
        kind = {0: "isotropic", 4: "oriented", 16: "striped"}[self.concentration]
        edge = "crisp" if self.gain > 1 else "soft"
        # Image rows grow downwards, so a wave vector at +theta in (x, y) pixel
        # coordinates runs at -theta on screen; the stripes are perpendicular to it.
        angle = "" if self.concentration == 0 else f" {(90 - np.degrees(self.orientation)) % 180:.0f}deg"
        return f"{kind}{angle} {self.frequency:.2f}c/px {edge}"

    def spectrum(self, img_size: int) -> np.ndarray:
        """Amplitude filter on the ``rfft2`` grid, shape ``(img_size, img_size // 2 + 1)``."""
        fy = np.fft.fftfreq(img_size)[:, None]
        fx = np.fft.rfftfreq(img_size)[None, :]
        rho = np.hypot(fx, fy)
        rho[0, 0] = 1.0  # the mean is removed below; avoid log(0)
        ring = np.exp(-np.log(rho / self.frequency) ** 2 / (2 * TEXTURE_RING_WIDTH**2))
        ring[0, 0] = 0.0
        angle = np.arctan2(fy, fx)
        return (ring * np.abs(np.cos(angle - self.orientation)) ** self.concentration).astype(np.float32)


def texture_class(k: int) -> TextureClass:
    """The texture of class ``k``."""
    u = low_discrepancy_point(k, 4)
    low, high = TEXTURE_FREQUENCY_RANGE
    return TextureClass(frequency=float(low * (high / low) ** u[0]),
                        orientation=float(np.pi * u[1]),
                        concentration=TEXTURE_CONCENTRATIONS[int(u[2] * len(TEXTURE_CONCENTRATIONS))],
                        gain=TEXTURE_GAINS[int(u[3] * len(TEXTURE_GAINS))])


RADIUS_TABLE_SIZE = 1024  # outline radius sampled at this many angles; a power of two


def _bilinear_matrix(cells: int, img_size: int) -> np.ndarray:
    """(img_size, cells) matrix that upsamples a grid of values over the image linearly."""
    position = np.clip((np.arange(img_size) + 0.5) / img_size * cells - 0.5, 0, cells - 1)
    low = np.floor(position).astype(int)
    high = np.minimum(low + 1, cells - 1)
    weight = position - low
    matrix = np.zeros((img_size, cells), dtype=np.float32)
    matrix[np.arange(img_size), low] += 1 - weight
    matrix[np.arange(img_size), high] += weight
    return matrix


class _Draws:
    """Uniform numbers drawn in one call (much cheaper than many), handed out in order."""

    def __init__(self, rng: np.random.Generator, count: int) -> None:
        self._values = iter(rng.random(count).tolist())

    def uniform(self, low: float = 0.0, high: float = 1.0) -> float:
        return low + (high - low) * next(self._values)


class SyntheticWorld(torch.utils.data.Dataset):
    """A synthetic world between objects (``texture_weight=0``) and textures (``1``): ``size``
    images (default 10,000 for train, 2,000 for val and test) of ``img_size`` pixels a side
    (16-256), generated when indexed, as ``(PIL RGB image, label)`` or ``(transform(image), label)``.

    ``seed`` selects the images, not the classes; ``object_scale`` multiplies the objects'
    equivalent radius; ``clutter`` is the opacity of the background's blotches and strokes (0:
    one plain colour). ``clutter`` and ``palette`` leave the draws unchanged, so one
    ``(seed, index)`` shows the same object in the same place at every value.
    """

    def __init__(self, split: str = "train", *, img_size: int = 32, num_classes: int = 10, size: int | None = None,
                 seed: int = 0, texture_weight: float = 0.0, object_scale: float = 1.0, clutter: float = 1.0,
                 palette: str = "random", transform: Callable | None = None) -> None:
        if split not in SPLITS:
            raise ValueError(f"Unknown split {split!r} for a synthetic world; use one of {', '.join(SPLITS)}.")
        if not MIN_IMG_SIZE <= img_size <= MAX_IMG_SIZE:
            raise ValueError(f"img_size must be between {MIN_IMG_SIZE} and {MAX_IMG_SIZE} pixels, got {img_size}.")
        if num_classes < 1:
            raise ValueError(f"num_classes must be at least 1, got {num_classes}.")
        if size is not None and size < 0:
            raise ValueError(f"size must be a non-negative number of images, got {size}.")
        if not 0.0 <= texture_weight <= 1.0:
            raise ValueError(f"texture_weight must lie in [0, 1], got {texture_weight}.")
        if not 0.0 < object_scale <= MAX_OBJECT_SCALE:
            raise ValueError(f"object_scale must lie in (0, {MAX_OBJECT_SCALE}], got {object_scale}.")
        if not 0.0 <= clutter <= 1.0:
            raise ValueError(f"clutter must lie in [0, 1], got {clutter}.")
        if palette not in PALETTES:
            raise ValueError(f"palette must be one of {', '.join(map(repr, PALETTES))}, got {palette!r}.")
        if not 0 <= seed < 2**64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed}.")
        self.split = split
        self.img_size = img_size
        self.num_classes = num_classes
        self.size = DEFAULT_SPLIT_SIZES[split] if size is None else size
        self.seed = seed
        self.texture_weight = float(texture_weight)
        self.object_scale = float(object_scale)
        self.clutter = float(clutter)
        self.palette = palette
        self.transform = transform
        self._key = (SPLITS.index(split) << 64) | seed
        # Pixel centres in pixel units, so distances come out in pixels.
        pixel_centres = np.arange(img_size, dtype=np.float32) + 0.5
        self._x, self._y = pixel_centres[None, :], pixel_centres[:, None]
        self._upsamplers = [(_bilinear_matrix(cells, img_size), amplitude) for cells, amplitude in BACKGROUND_GRIDS]
        table_angles = -np.pi + (np.arange(RADIUS_TABLE_SIZE) + 0.5) * 2 * np.pi / RADIUS_TABLE_SIZE
        self._radius_tables = np.stack([shape_class(k).radius(table_angles) for k in range(num_classes)]).astype(np.float32)
        self._textures = [texture_class(k) for k in range(num_classes)]
        self._spectra: dict[int, np.ndarray] = {}

    @cached_property
    def classes(self) -> list[str]:
        """One name per class: ``shape-007``, the texture's parameters, or both."""
        shapes = [f"shape-{k:03d}" for k in range(self.num_classes)]
        textures = [texture.name for texture in self._textures]
        if self.texture_weight == 0:
            return shapes
        if self.texture_weight == 1:
            return textures
        return [f"{shape} + {texture}" for shape, texture in zip(shapes, textures)]

    @property
    def targets(self) -> list[int]:
        return [self.label(index) for index in range(self.size)]

    def __len__(self) -> int:
        return self.size

    def label(self, index: int) -> int:
        return index % self.num_classes

    def __getitem__(self, index: int):
        if not 0 <= index < self.size:
            raise IndexError(f"index {index} out of range for a split of {self.size} images")
        image = Image.fromarray(self.image_array(index))
        return (image if self.transform is None else self.transform(image)), self.label(index)

    def image_array(self, index: int) -> np.ndarray:
        """Image ``index`` as ``uint8`` of shape ``(img_size, img_size, 3)``."""
        label = self.label(index)
        w = self.texture_weight
        if w == 0:
            image = self._object_image(label, self._stream(index, layer=0))
        elif w == 1:
            image = self._texture_image(label, self._stream(index, layer=1))
        else:
            image = (1 - w) * self._object_image(label, self._stream(index, layer=0))
            image += w * self._texture_image(label, self._stream(index, layer=1))
        # Every pixel is a convex blend of colours in [0, 1], so no clipping is needed.
        # Channel-first while rendering: numpy is several times faster on contiguous planes.
        image *= 255
        image += 0.5
        return np.ascontiguousarray(image.astype(np.uint8).transpose(1, 2, 0))

    def _stream(self, index: int, layer: int) -> np.random.Generator:
        # Philox counter words 0-1 advance as numbers are drawn; the image index and the
        # layer sit in words 2-3, so no two (index, layer) streams ever overlap.
        return np.random.Generator(np.random.Philox(key=self._key, counter=[0, 0, index, layer]))

    def object_factors(self, index: int) -> dict[str, float]:
        """What image ``index``'s object layer drew besides its class (:data:`OBJECT_FACTORS`): the
        object's HSV value (below 0.25 dark, above 0.8 bright), hue (turns), equivalent radius and
        centre (fractions of the side), and the background's mean value."""
        if self.texture_weight == 1:
            raise ValueError("a texture world (texture_weight = 1) draws no object; its images have no object factors")
        factors: dict[str, float] = {}
        self._object_image(self.label(index), self._stream(index, layer=0), factors)
        return factors

    def _object_image(self, label: int, rng: np.random.Generator, factors: dict[str, float] | None = None) -> np.ndarray:
        """Cluttered background, then the class shape at a random place, scale and colour; the
        draws that are not the class go into ``factors`` when one is given."""
        side = self.img_size  # lengths are drawn as fractions of the side, used in pixels
        draws = _Draws(rng, 6 + 9 * STROKES + 7)
        image = self._background(rng, draws, factors)
        for _ in range(STROKES):
            x, y, angle = side * draws.uniform(), side * draws.uniform(), draws.uniform(0, np.pi)
            length, width = side * draws.uniform(0.3, 0.8), side * draws.uniform(*STROKE_WIDTH_RANGE)
            colour = self._colour("stroke", draws.uniform(), draws.uniform(0.2, 0.9), draws.uniform(0.15, 0.95))
            along_x, along_y = math.cos(angle), math.sin(angle)
            to_x, to_y = self._x - x, self._y - y
            along = to_x * along_x + to_y * along_y
            across = np.abs(to_x * along_y - to_y * along_x)
            # A bar from (x, y) along the angle: inside when within width/2 of its axis
            # and between its two ends; the smallest margin is the distance to the edge.
            inside = np.minimum(np.minimum(along, length - along), width / 2 - across)
            self._paint(image, inside, colour, self.clutter)

        table = self._radius_tables[label]
        scale = self.object_scale * draws.uniform(*OBJECT_RADIUS_RANGE)
        margin = min(float(table.max()) * scale, 0.5)
        centre_x, centre_y = draws.uniform(margin, 1 - margin), draws.uniform(margin, 1 - margin)
        to_x, to_y = self._x - side * centre_x, self._y - side * centre_y
        value = draws.uniform(0.8, 1.0) if draws.uniform() < 0.5 else draws.uniform(0.05, 0.25)
        hue = draws.uniform()
        colour = self._colour("object", hue, draws.uniform(0.5, 1.0), value)
        if self.palette == "grey":  # the factors say what is painted: the object's grey, with no hue
            value, hue = PALETTE_GREYS["object"], 0.0
        if factors is not None:
            factors |= {"object value": value, "object hue": hue, "object radius": scale,
                        "object x": centre_x, "object y": centre_y}
        # Angle in (-pi, pi] to a bin of the radius table (bin T wraps to 0).
        bins = (np.arctan2(to_y, to_x) * (RADIUS_TABLE_SIZE / (2 * np.pi)) + RADIUS_TABLE_SIZE / 2).astype(np.intp)
        radius = table[bins & (RADIUS_TABLE_SIZE - 1)]
        radius *= side * scale
        radius -= np.hypot(to_x, to_y)
        self._paint(image, radius, colour)
        return image

    def _background(self, rng: np.random.Generator, draws: _Draws, factors: dict[str, float] | None = None) -> np.ndarray:
        """Smooth blotches between two mid-value colours (value noise, two octaves)."""
        field = np.zeros((self.img_size, self.img_size), dtype=np.float32)
        for upsample, amplitude in self._upsamplers:
            cells = rng.random((upsample.shape[1], upsample.shape[1]), dtype=np.float32)
            field += amplitude * (upsample @ cells @ upsample.T)
        field /= sum(amplitude for _, amplitude in self._upsamplers)
        hue = draws.uniform()
        low_saturation, low_value = draws.uniform(0.2, 0.7), draws.uniform(0.35, 0.65)
        low = self._colour("background", hue, low_saturation, low_value)
        high_hue, high_saturation, high_value = hue + draws.uniform(-0.2, 0.2), draws.uniform(0.2, 0.7), draws.uniform(0.35, 0.65)
        high = self._colour("background", high_hue, high_saturation, high_value)
        if factors is not None:
            factors["background value"] = (PALETTE_GREYS["background"] if self.palette == "grey"
                                           else (low_value + high_value) / 2)
        return low + (self.clutter * field) * (high - low)

    @staticmethod
    def _paint(image: np.ndarray, inside_pixels: np.ndarray, colour: np.ndarray, opacity: float = 1.0) -> None:
        """Blend ``colour`` in at ``opacity`` where the signed distance to the edge (pixels,
        positive inside) is positive, with a one-pixel antialiased edge."""
        alpha = inside_pixels + 0.5
        np.clip(alpha, 0.0, 1.0, out=alpha)
        if opacity != 1.0:
            alpha *= opacity
        image += alpha * (colour - image)

    def _texture_image(self, label: int, rng: np.random.Generator) -> np.ndarray:
        """Gaussian noise filtered by the class spectrum, tanh-shaped, between two random colours."""
        if label not in self._spectra:
            self._spectra[label] = self._textures[label].spectrum(self.img_size)
        noise = rng.standard_normal((self.img_size, self.img_size), dtype=np.float32)
        field = scipy.fft.irfft2(scipy.fft.rfft2(noise) * self._spectra[label], s=noise.shape)
        # The spectrum has no DC term, so the field has zero mean: its RMS is its std.
        flat = field.ravel()
        field *= self._textures[label].gain / (math.sqrt(float(flat @ flat) / flat.size) + 1e-8)
        shade = 0.5 + 0.5 * np.tanh(field)
        draws = _Draws(rng, 7)
        dark = (draws.uniform(), draws.uniform(0.2, 1.0), draws.uniform(0.05, 0.35))
        bright = (draws.uniform(), draws.uniform(0.2, 1.0), draws.uniform(0.7, 1.0))
        if draws.uniform() < 0.5:
            dark, bright = bright, dark
        # After the swap, so that on the grey palette every texture runs from the same dark grey to the same bright one.
        low, high = self._colour("texture dark", *dark), self._colour("texture bright", *bright)
        return low + shade * (high - low)

    def _colour(self, role: str, hue: float, saturation: float, value: float) -> np.ndarray:
        """The RGB colour, shape (3, 1, 1), painted for a drawn HSV colour in ``role``."""
        if self.palette == "grey":
            hue, saturation, value = 0.0, 0.0, PALETTE_GREYS[role]
        return np.array(colorsys.hsv_to_rgb(hue % 1.0, saturation, value), dtype=np.float32).reshape(3, 1, 1)
