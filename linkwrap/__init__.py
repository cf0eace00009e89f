"""linkwrap: fast and safe linking on Linux.

Nothing is imported here: this package is imported on every link, and each
import costs the build time (see docs/hot-path.md, "The import budget").
"""
__version__ = "0.1.0"
