"""Permission tests that also hold when the suite runs as root.

Root reads a folder of mode 000 anyway (the capabilities CAP_DAC_OVERRIDE and
CAP_DAC_READ_SEARCH bypass file modes), so an "unreadable folder" test would pass for the
wrong reason, or fail. :func:`file_modes_apply` drops those two capabilities from the
calling thread's effective set (they stay permitted, so they are raised again afterwards):
modes then apply to root as to anyone.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager

_VERSION_3 = 0x20080522
_DAC_BITS = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


class _Header(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _Data(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _caps() -> tuple[_Header, ctypes.Array[_Data]]:
    header, data = _Header(_VERSION_3, 0), (_Data * 2)()
    if _libc().capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    return header, data


def _set(header: _Header, data: ctypes.Array[_Data]) -> None:
    if _libc().capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


@contextmanager
def file_modes_apply() -> Iterator[None]:
    """Within the block, this thread cannot read what file modes forbid, even as root."""
    if os.geteuid() != 0:
        yield
        return
    header, data = _caps()
    saved = data[0].effective
    data[0].effective = saved & ~_DAC_BITS
    _set(header, data)
    try:
        yield
    finally:
        data[0].effective = saved
        _set(header, data)
