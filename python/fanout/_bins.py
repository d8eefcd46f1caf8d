"""Where fanout's executables are: $FANOUT_BIN_DIR, the build tree this
package was built in (build/python/fanout -> build/bin), or PATH."""

import os
import shutil

from .errors import NotFound


def find_binary(name):
    candidates = []
    env = os.environ.get("FANOUT_BIN_DIR")
    if env:
        candidates.append(os.path.join(env, name))
    here = os.path.dirname(os.path.abspath(__file__))
    candidates.append(os.path.join(here, "..", "..", "bin", name))  # build/python/fanout
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.normpath(c)
    on_path = shutil.which(name)
    if on_path:
        return on_path
    raise NotFound(
        "cannot find the '%s' executable: set FANOUT_BIN_DIR to the folder holding it "
        "(build/bin after ./run build), or put it on PATH" % name)
