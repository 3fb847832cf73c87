"""Click-through-rate models over Criteo-style ``(feat_ids, feat_vals)`` inputs."""

from .wide_deep import WideDeepModel

__all__ = ["WideDeepModel"]
