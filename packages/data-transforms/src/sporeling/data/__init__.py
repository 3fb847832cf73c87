"""sporeling.data: dataset pipeline and unified vision transforms (MindSpore 1.8 API).

Sources, pipeline ops and iterators live in `sporeling.data.engine` and
`sporeling.data.datasets` and are re-exported here; transforms live in
`sporeling.data.transforms` and `sporeling.data.vision`.
"""

from sporeling.data._version import __version__

__all__ = ["__version__"]
