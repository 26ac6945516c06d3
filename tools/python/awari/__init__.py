"""Awari/Oware endgame tablebases built by the `awari` tool, from Python.

    import awari
    tb = awari.open("db")                        # a folder from `awari build --dir db`
    print(tb.probe([1, 1, 1, 1, 1, 2, 4, 2, 3, 0, 0, 0]))   # margin 0, a draw
"""

from ._awari import Tablebase, Value, __version__, open

__all__ = ["Tablebase", "Value", "open", "__version__"]
