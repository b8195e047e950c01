"""The GPU inventory of this machine through NVML, behind one small adapter (:mod:`.nvml`).

Imports ``models`` at most; ``pynvml`` is imported lazily, so nothing here needs
a GPU or a driver to load.
"""

__all__ = []
