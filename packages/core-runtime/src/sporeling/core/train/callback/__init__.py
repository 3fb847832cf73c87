"""``sporeling.core.train.callback``: the Callback base and the built-in callbacks.

Each part's owner adds one import line for its module below.
"""
