"""SCOP structured pruning ("Scientific Control for reliable neural network pruning").

Phase 1, ``PrunerKfCompressAlgo.apply``: every Conv2d followed by a BatchNorm2d (found by a
``[Conv2d, BatchNorm2d]`` pattern in the rewrite tree, so any conv network qualifies)
becomes a :class:`KfConv2d` with a learnable per-channel ``kfscale`` (0.5 at start). In
training the batch is ``[real ; knockoff]`` and the conv output becomes
``concat(kfscale * real + (1 - kfscale) * knockoff, knockoff)`` before the BN. The returned
network is wrapped in :class:`KnockoffNetwork`, which builds the knockoff half by permuting
the batch (1.8's sample script does this with ``Randperm``) and returns the real half.

Between phases: ``score = |bn.gamma| * (kfscale - (1 - kfscale))``; the channels of one
coupled group (see :mod:`.channel_groups`) are ranked by their summed score and
``prune_rate * C`` of the lowest are pruned.

Phase 2, ``PrunerFtCompressAlgo.apply``: each KfConv2d becomes a :class:`MaskedConv2dbn`
that zeroes the pruned channels after the BN, and a BN on pruned channels that follows no
conv (after a concat, an add) becomes a :class:`MaskedNorm`, so that the zeros reach the
next layer as they would in the pruned network. ``convert`` removes them physically: a
new, smaller network of plain core layers with the masked network's outputs.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from sporeling.core import Parameter, Tensor, nn, ops
from sporeling.core.rewrite import Node, PatternEngine, Replacement, SymbolTree

from ..comp_algo import CompAlgo
from .channel_groups import ChannelGroup, find_channel_groups
from .physical import cat_kept, prune_channels

__all__ = [
    "KfConv2d",
    "MaskedConv2dbn",
    "MaskedNorm",
    "KnockoffNetwork",
    "PrunerKfCompressAlgo",
    "PrunerFtCompressAlgo",
    "kf_scores",
    "keep_indices",
    "rounded_kept",
]


class KfConv2d(nn.Cell):
    """Conv2d + BatchNorm2d with knockoff mixing (``kfscale`` shape (1, C, 1, 1), 0.5)."""

    def __init__(self, conv: nn.Conv2d, bn: nn.Cell) -> None:
        super().__init__(auto_prefix=False)  # shared parameters keep their names
        self.conv = conv
        self.bn = bn
        c = conv.out_channels
        self.kfscale = Parameter(np.full((1, c, 1, 1), 0.5, np.float32), name="kfscale")

    def construct(self, x: Tensor) -> Tensor:
        y = self.conv(x)
        if self.training:
            n = y.shape[0] // 2
            real, knockoff = y[:n], y[n:]
            mixed = self.kfscale * real + (1.0 - self.kfscale) * knockoff
            y = ops.concat((mixed, knockoff), 0)
        return self.bn(y)

    def score(self) -> np.ndarray:
        """``|gamma| * (kfscale - (1 - kfscale))`` per output channel."""
        k = self.kfscale.asnumpy().reshape(-1).astype(np.float64)
        return np.abs(self.bn.gamma.asnumpy().astype(np.float64)) * (2.0 * k - 1.0)


class MaskedConv2dbn(nn.Cell):
    """Conv2d + BatchNorm2d whose pruned output channels are multiplied by 0."""

    def __init__(self, conv: nn.Conv2d, bn: nn.Cell, mask: np.ndarray) -> None:
        super().__init__(auto_prefix=False)  # shared parameters keep their names
        self.conv = conv
        self.bn = bn
        self.mask = Tensor(np.asarray(mask, np.float32).reshape(1, -1, 1, 1))

    def construct(self, x: Tensor) -> Tensor:
        return self.bn(self.conv(x)) * self.mask


class MaskedNorm(nn.Cell):
    """A BatchNorm that does not follow a pruned conv (after a concat, an add, a depthwise
    conv), its pruned features multiplied by 0: the BN's shift would otherwise turn the
    zeros of the pruned channels into values the next layer reads, which the physically
    pruned network no longer has."""

    def __init__(self, bn: nn.Cell, mask: np.ndarray) -> None:
        super().__init__(auto_prefix=False)  # shared parameters keep their names
        self.bn = bn
        self.mask = Tensor(np.asarray(mask, np.float32).reshape(1, -1, 1, 1))

    def construct(self, x: Tensor) -> Tensor:
        return self.bn(x) * self.mask


class KnockoffNetwork(nn.Cell):
    """Feeds ``[x ; x[perm]]`` to a KfConv2d network in training and returns the real half
    (in eval it is the network itself). Parameter names are the inner network's."""

    def __init__(self, network: nn.Cell, seed: int = 0) -> None:
        super().__init__(auto_prefix=False)
        self.network = network
        self._rng = np.random.default_rng(seed)

    def construct(self, x: Tensor) -> Tensor:
        if not self.training:
            return self.network(x)
        n = x.shape[0]
        perm = Tensor(self._rng.permutation(n).astype(np.int32))
        out = self.network(ops.concat((x, ops.gather(x, perm, 0)), 0))
        return out[:n]


class _ToKf(Replacement):
    def build(self, pattern: Any, is_chain: bool, matched: OrderedDict[str, Node]) -> list[Node]:
        conv_node, bn_node = list(matched.values())
        cell = KfConv2d(conv_node.get_instance(), bn_node.get_instance())
        name = f"{conv_node.get_name()}_kf"
        return [Node.create_call_cell(cell, [name], conv_node.get_args(), name=name)]


def _check_rate(cls: str, prune_rate: Any) -> float:
    if isinstance(prune_rate, bool) or not isinstance(prune_rate, (int, float)):
        raise TypeError(f"{cls}: argument 'prune_rate' expected a float, got {prune_rate!r}")
    if not 0.0 <= float(prune_rate) < 1.0:
        raise ValueError(
            f"{cls}: argument 'prune_rate' expected a float in [0, 1), got {prune_rate!r}"
        )
    return float(prune_rate)


def _cells_of(network: nn.Cell, cls: type) -> list[Any]:
    return [c for _, c in network.cells_and_names() if isinstance(c, cls)]


def kf_scores(network: nn.Cell) -> dict[int, np.ndarray]:
    """SCOP scores per conv (keyed by ``id(conv)``) from the KfConv2d cells of ``network``."""
    return {id(kf.conv): kf.score() for kf in _cells_of(network, KfConv2d)}


def _check_round_to(cls: str, round_to: Any) -> int:
    if isinstance(round_to, bool) or not isinstance(round_to, int) or round_to < 1:
        raise ValueError(f"{cls}: argument 'round_to' expected an int >= 1, got {round_to!r}")
    return round_to


def rounded_kept(channels: int, prune_rate: float, round_to: int) -> int:
    """The channels kept of ``channels`` at ``prune_rate``: MindSpore's ``channels -
    int(prune_rate * channels)`` (at least one), or with ``round_to`` > 1 ``(1 -
    prune_rate) * channels`` rounded to the nearest multiple of ``round_to`` (half up),
    at least ``round_to`` and at most ``channels`` (fewer channels than that stay whole)."""
    if round_to <= 1:
        return max(channels - int(prune_rate * channels), 1)
    near = int(np.floor((1.0 - prune_rate) * channels / round_to + 0.5)) * round_to
    return min(max(near, round_to), channels)


def keep_indices(
    group: ChannelGroup, scores: dict[int, np.ndarray], prune_rate: float, round_to: int = 1
) -> np.ndarray | None:
    """The kept channels of a group (sorted), or None if it is not pruned: every producer
    must have a score (a BN after it), and at least one channel stays. A group a grouped
    conv touches is pruned by blocks (``group.blocks``): the lowest ``prune_rate`` of each
    block goes, so every conv group keeps the same number of channels (how many:
    :func:`rounded_kept`)."""
    if not group.prunable or any(id(p) not in scores for p in group.producers):
        return None
    total = sum(scores[id(p)] for p in group.producers)
    per = group.channels // group.blocks
    drop = per - rounded_kept(per, prune_rate, round_to)
    if drop <= 0:
        return None
    kept = [
        b * per + np.argsort(total[b * per : (b + 1) * per], kind="stable")[drop:]
        for b in range(group.blocks)
    ]
    return np.sort(np.concatenate(kept))


def _settle_grouped_cats(
    groups: list[ChannelGroup],
    scores: dict[int, np.ndarray],
    prune_rate: float,
    whole: set[int] | None = None,
    round_to: int = 1,
) -> dict[int, np.ndarray]:
    """The kept channels per producer (``id(conv)`` -> indices). A grouped conv reading a
    concat must keep the same number of inputs in each of its groups; where its parts
    would not (a part not pruned, or pruned by other blocks), those parts stay whole.
    Unpruning only grows counts, so this settles. ``whole``: ids of groups kept whole
    from the start."""
    whole = set(whole or ())
    while True:
        keep: dict[int, np.ndarray] = {}
        for group in groups:
            idx = None if id(group) in whole else keep_indices(group, scores, prune_rate, round_to)
            if idx is not None:
                for p in group.producers:
                    keep[id(p)] = idx
        uneven = [
            use
            for g in groups
            for use in g.cat_uses
            if use.kind == "grouped" and not _even_groups(use, keep)
        ]
        if not uneven:
            return keep
        whole |= {id(part) for use in uneven for part in use.parts}


def _even_groups(use: Any, keep: dict[int, np.ndarray]) -> bool:
    idx = cat_kept(use, keep)
    if idx is None:
        return True
    size = use.cell.in_channels // use.cell.group
    return len(set(np.bincount(idx // size, minlength=use.cell.group).tolist())) == 1


def _norm_keep(groups: list[ChannelGroup], keep: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """The kept features of every BatchNorm on a pruned group or concat."""
    features: dict[int, np.ndarray] = {}
    for group in groups:
        idx = keep.get(id(group.producers[0])) if group.producers else None
        if idx is not None:
            for bn in group.norms:
                features[id(bn)] = idx
        for use in group.cat_uses:
            kept = cat_kept(use, keep) if use.kind == "norm" else None
            if kept is not None:
                features[id(use.cell)] = kept
    return features


class PrunerKfCompressAlgo(CompAlgo):
    """SCOP phase 1 (knockoff training). ``config``: {} (0.1 has no options)."""

    def apply(self, network: nn.Cell) -> nn.Cell:
        super().apply(network)
        stree = SymbolTree.create(network)
        PatternEngine([nn.Conv2d, nn.BatchNorm2d], _ToKf()).apply(stree)
        self._origin = network
        return KnockoffNetwork(stree.get_network())

    def callbacks(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []


class PrunerFtCompressAlgo(CompAlgo):
    """SCOP phase 2 (fine-tune with masks) and the physical export.

    ``config``: ``prune_rate`` (default 0.45, in [0, 1)) - an addition: 0.1 left the
    channel choice to the user's script; ``prune_residual`` (default True): with False,
    the channel groups that several convs write (those met at a residual add) stay
    whole and only the others are pruned, as 1.8's ResNet script leaves the residual
    width as it is (its conv3 scatters back to it); ``round_to`` (default 1: off, 1.8's
    counts), as Torch-Pruning's: each group keeps ``(1 - prune_rate) * C`` channels rounded
    to the nearest multiple of ``round_to`` (:func:`rounded_kept`), so the exported convs'
    channel counts fit the core's micro-kernel blocks (8, 16, 32).
    """

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__(config)
        self.prune_rate = _check_rate(type(self).__name__, self._config.get("prune_rate", 0.45))
        residual = self._config.get("prune_residual", True)
        if not isinstance(residual, bool):
            raise TypeError(
                f"{type(self).__name__}: argument 'prune_residual' expected a bool, "
                f"got {residual!r}"
            )
        self.prune_residual = residual
        self.round_to = _check_round_to(type(self).__name__, self._config.get("round_to", 1))
        unknown = set(self._config) - {"prune_rate", "prune_residual", "round_to"}
        if unknown:
            raise ValueError(f"{type(self).__name__}: unknown config keys {sorted(unknown)}")
        self._masks: dict[int, np.ndarray] = {}
        self._origin: nn.Cell | None = None

    def apply(self, network: nn.Cell) -> nn.Cell:
        """``network`` is phase 1's output (or any net with KfConv2d cells)."""
        super().apply(network)
        inner = network.network if isinstance(network, KnockoffNetwork) else network
        scores = kf_scores(inner)
        if not scores:
            raise ValueError(
                "PrunerFtCompressAlgo.apply: the network has no KfConv2d cells; apply "
                "PrunerKfCompressAlgo and train it first"
            )
        # the plain network: KfConv2d -> Conv2d + BN again (same parameters)
        plain = self._plain(inner)
        self._origin = plain
        groups = find_channel_groups(plain)
        whole = set() if self.prune_residual else {id(g) for g in groups if len(g.producers) > 1}
        self._keep = keep = _settle_grouped_cats(
            groups, scores, self.prune_rate, whole, self.round_to
        )
        features = _norm_keep(groups, keep)  # id(bn) -> its kept features
        wrapped: set[int] = set()

        def mask_of(bn: nn.Cell) -> np.ndarray:
            mask = np.ones(bn.num_features, np.float32)
            if id(bn) in features:
                mask[:] = 0.0
                mask[features[id(bn)]] = 1.0
            return mask

        class _ToMasked(Replacement):
            def build(
                self, pattern: Any, is_chain: bool, matched: OrderedDict[str, Node]
            ) -> list[Node]:
                conv_node, bn_node = list(matched.values())
                bn = bn_node.get_instance()
                wrapped.add(id(bn))
                cell = MaskedConv2dbn(conv_node.get_instance(), bn, mask_of(bn))
                name = f"{conv_node.get_name()}_masked"
                return [Node.create_call_cell(cell, [name], conv_node.get_args(), name=name)]

        class _ToMaskedNorm(Replacement):
            def build(
                self, pattern: Any, is_chain: bool, matched: OrderedDict[str, Node]
            ) -> list[Node]:
                (node,) = matched.values()
                bn = node.get_instance()
                if id(bn) in wrapped or id(bn) not in features:
                    return []  # unchanged
                name = f"{node.get_name()}_masked"
                cell = MaskedNorm(bn, mask_of(bn))
                return [Node.create_call_cell(cell, [name], node.get_args(), name=name)]

        stree = SymbolTree.create(plain)
        PatternEngine([nn.Conv2d, nn.BatchNorm2d], _ToMasked()).apply(stree)
        PatternEngine([nn.BatchNorm2d], _ToMaskedNorm()).apply(stree)
        return stree.get_network()

    @staticmethod
    def _plain(network: nn.Cell) -> nn.Cell:
        stree = SymbolTree.create(network)

        class _Unkf(Replacement):
            def build(
                self, pattern: Any, is_chain: bool, matched: OrderedDict[str, Node]
            ) -> list[Node]:
                (node,) = matched.values()
                kf = node.get_instance()
                conv = Node.create_call_cell(kf.conv, ["conv"], node.get_args(), name="conv")
                bn = Node.create_call_cell(kf.bn, ["bn"], conv.get_targets(), name="bn")
                return [conv, bn]

        PatternEngine([KfConv2d], _Unkf()).apply(stree)
        return stree.get_network()

    def convert(self, net_opt: nn.Cell, ckpt_path: str = "") -> nn.Cell:
        """The physically pruned network (plain core layers, fewer channels)."""
        super().convert(net_opt, ckpt_path)
        if self._origin is None:
            raise ValueError("PrunerFtCompressAlgo.convert: call apply() first")
        return prune_channels(self._origin, self._keep)
