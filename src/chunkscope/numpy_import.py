"""numpy, imported so that its BLAS thread pool does not busy-wait on the CPU chunkscope is using.

The OpenBLAS inside numpy's wheels starts a pool of worker threads when it loads, and each of them polls for work
for about 2^28 cycles before it sleeps: measured here as 100 ms of CPU burnt on the second core right after
``import numpy``, which is exactly when chunkscope's encoder thread needs that core. chunkscope itself makes no BLAS
calls. ``OPENBLAS_THREAD_TIMEOUT`` (read once, when the library loads) shortens the polling; the pool and its size
stay as they are, so numpy's linear algebra keeps its threads. A value the user set is left alone, and the
environment is restored after the import (child processes see what they would have seen).
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

#: OpenBLAS's minimum: workers poll for 2^4 cycles, then sleep until work arrives.
_SHORT_TIMEOUT = "4"
_VAR = "OPENBLAS_THREAD_TIMEOUT"


def numpy() -> ModuleType:
    """The numpy module (imported on first use with the short OpenBLAS poll described above)."""
    np = sys.modules.get("numpy")
    if np is not None:
        return np
    if _VAR in os.environ or "GOTO_THREAD_TIMEOUT" in os.environ:
        import numpy as np

        return np
    os.environ[_VAR] = _SHORT_TIMEOUT
    try:
        import numpy as np
    finally:
        os.environ.pop(_VAR, None)
    return np
