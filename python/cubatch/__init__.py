"""cubatch: talk to the preloaded libcubatch.so from Python.

cubatch batches a CUDA program's small asynchronous copies; it is preloaded,
and nothing here is needed for that: run the program as

    cubatch python train.py            (the console script of this package)
    python -m cubatch --stats python train.py

These functions reach the preloaded library through ctypes (its cubatch_*
functions, include/cubatch.h).  Without the preload, loaded() and batching()
answer False and flush() does nothing (nothing can be queued); set_enabled()
and stats() raise NotLoadedError, since there is nothing to switch or report.
"""
import ctypes
import json

from ._version import __version__

__all__ = ["loaded", "batching", "flush", "set_enabled", "stats", "CubatchError", "NotLoadedError", "__version__"]


class CubatchError(RuntimeError):
    """The preloaded library cannot do what was asked."""


class NotLoadedError(CubatchError):
    """libcubatch.so is not preloaded into this process."""

    def __init__(self, what):
        super().__init__("%s: libcubatch.so is not preloaded into this process "
                         "(run it as `cubatch python ...`, or set LD_PRELOAD)" % what)


_process = None


def _function(name, restype, argtypes):
    """The library's NAME from the process's global scope, or None."""
    global _process
    if _process is None:
        _process = ctypes.CDLL(None)
    try:
        f = getattr(_process, name)
    except AttributeError:
        return None
    f.restype = restype
    f.argtypes = argtypes
    return f


def loaded():
    """True when libcubatch.so is preloaded into this process."""
    return _function("cubatch_flush", ctypes.c_int, []) is not None


def batching():
    """True when copies are being coalesced; False when cubatch is a pure
    pass-through (switched off, no CUDA 13 driver) or not preloaded."""
    f = _function("cubatch_batching_enabled", ctypes.c_int, [])
    return bool(f()) if f else False


def flush():
    """Submit every queued copy of every stream now.  Returns the first CUresult
    a submission produced (0: CUDA_SUCCESS); 0 without the preload."""
    f = _function("cubatch_flush", ctypes.c_int, [])
    return f() if f else 0


def set_enabled(on):
    """Switch deferral on or off for the copies that follow (cubatch_set_enabled).
    Returns what the library returns.  Raises NotLoadedError without the preload,
    CubatchError when the preloaded library is too old to have the switch."""
    if not loaded():
        raise NotLoadedError("cubatch.set_enabled()")
    f = _function("cubatch_set_enabled", ctypes.c_int, [ctypes.c_int])
    if f is None:
        raise CubatchError("cubatch.set_enabled(): the preloaded libcubatch.so has no cubatch_set_enabled "
                           "(a library older than this module, %s): switch it with CUBATCH_ENABLE=0 "
                           "at start instead" % __version__)
    return f(1 if on else 0)


def stats():
    """The library's report now, as a dict (the JSON of CUBATCH_STATS=json:
    cubatch, pid, host, batching, reason, entry_points, calls, counters).
    Raises NotLoadedError without the preload."""
    f = _function("cubatch_stats_json", ctypes.c_size_t, [ctypes.c_char_p, ctypes.c_size_t])
    if f is None:
        raise NotLoadedError("cubatch.stats()")
    # the counters may grow between the two calls: ask again until it fits
    size = f(None, 0) + 1
    while True:
        buf = ctypes.create_string_buffer(size)
        need = f(buf, size)
        if need < size:
            return json.loads(buf.value.decode("utf-8"))
        size = need + 256
