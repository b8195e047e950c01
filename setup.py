"""Packaging: the repository's folders install under one import name, ``gpu_preempt``.

``models/`` becomes ``gpu_preempt.models`` and ``solver/`` ``gpu_preempt.solver`` (the root ``__init__.py`` is
``gpu_preempt`` itself, re-exporting the public API). pyproject.toml's ``packages.find`` cannot add that prefix,
so the subpackages are found here; everything else is in pyproject.toml.
"""

from setuptools import find_packages, setup

parts = find_packages(include=["models", "models.*", "solver", "solver.*"])
# script_name: the root folder is a package, and build_py leaves out only the file it knows as the setup script
# (under a PEP 517 build it would otherwise take the build backend's name and ship this file in the wheel).
setup(packages=["gpu_preempt", *(f"gpu_preempt.{name}" for name in parts)], script_name="setup.py")
