"""Click-through-rate models over Criteo-style ``(feat_ids, feat_vals)`` inputs."""

from .dcn_v2 import CrossLayer, DCNv2Model
from .deepfm import DeepFMModel, fm_interaction
from .wide_deep import WideDeepModel

__all__ = ["WideDeepModel", "DeepFMModel", "DCNv2Model", "CrossLayer", "fm_interaction"]
