"""Modules most runs never use, imported on first use instead of at start-up.

PyYAML's event parser is consulted only for texts with tags or aliases and for the position
of a finding; importing it would be a large share of every run's start-up.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def on_first_use(name: str) -> ModuleType:
    """The module ``name``, whose code runs when one of its attributes is first read
    (importlib's LazyLoader); an already imported one as it is."""
    found = sys.modules.get(name)
    if found is not None:
        return found
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}", name=name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
