"""``sporeling.core.train``: Model, callbacks, metrics, checkpoints and in-memory datasets.

Each part's owner adds one import line for its module below.
"""
