"""Structured pruning: SCOP (knockoff scores) with channel groups found from the graph and
physical channel removal."""

from .channel_groups import CatUse, ChannelGroup, find_channel_groups
from .physical import count_params, prune_channels
from .scop import (
    KfConv2d,
    KnockoffNetwork,
    MaskedConv2dbn,
    MaskedNorm,
    PrunerFtCompressAlgo,
    PrunerKfCompressAlgo,
    keep_indices,
    kf_scores,
)

__all__ = [
    "PrunerKfCompressAlgo",
    "PrunerFtCompressAlgo",
    "KfConv2d",
    "MaskedConv2dbn",
    "MaskedNorm",
    "KnockoffNetwork",
    "CatUse",
    "ChannelGroup",
    "find_channel_groups",
    "prune_channels",
    "count_params",
    "kf_scores",
    "keep_indices",
]
