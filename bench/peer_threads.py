"""peer_threads.py: the thread settings the PyTorch peers in bench/ share.

Import it before torch (it imports torch itself): it sets OMP_WAIT_POLICY
first. With the default (active) policy, torch's idle OpenMP threads spin on
the cores the BLAS threads need: on 2 cores T = 2 ran 3-4x slower than T = 1.
Passive waiting gives torch its best case. An OMP_WAIT_POLICY already set is
kept.

Then set_threads(T) sets torch's pool and, when torch has loaded an OpenBLAS
(Debian's torch does its products in the system libblas.so.3, OpenBLAS
here), that library's own pool, which torch.set_num_threads does not touch.
A PyPI torch does its products in MKL and oneDNN, which torch.set_num_threads
sets. blas_info() says which it is.
"""
import ctypes
import os

OMP_WAIT_POLICY = os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402


def _loaded_openblas():
    """The OpenBLAS torch loaded (found in /proc/self/maps), or None: loading
    one by name could open a second copy whose pool torch never uses."""
    try:
        with open("/proc/self/maps") as f:
            paths = {l.split()[-1] for l in f if "openblas" in l.lower() and "/" in l}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)  # the copy torch already loaded
            lib.openblas_set_num_threads.argtypes = [ctypes.c_int]
            lib.openblas_get_config.restype = ctypes.c_char_p
            return lib
        except (OSError, AttributeError):
            pass
    return None


OPENBLAS = _loaded_openblas()


def blas_info():
    """What does torch's matrix products, for the report."""
    if OPENBLAS is not None:
        return OPENBLAS.openblas_get_config().decode("ascii", "replace")
    if torch.backends.mkl.is_available():
        return "MKL (torch's own; threads per torch.set_num_threads)"
    return "not OpenBLAS nor MKL (BLAS threads not set by this script)"


def set_threads(T):
    """T threads for torch and, when loaded, OpenBLAS."""
    torch.set_num_threads(T)
    if OPENBLAS is not None:
        OPENBLAS.openblas_set_num_threads(T)
