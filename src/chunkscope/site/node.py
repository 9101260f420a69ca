"""Running one of a site's JavaScript files with Node, for a tree whose config is trusted: what a script printed
as JSON, or one line saying why it could not be had."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

#: Seconds: loading a config or a sidebars file takes well under one; a hung import must not hang the loader.
NODE_TIMEOUT = 30


#: Around a script's body: ``file`` (the last argument) loaded as CommonJS, or imported where it is an ES module,
#: as ``mod``; the body prints one JSON line; an error is its first line on stderr and exit status 1.
_LOAD = r"""
const url = require('url');
const file = process.argv[process.argv.length - 1];
(async () => {
  let mod;
  try { mod = require(file); } catch (e) {
    if (e && (e.code === 'ERR_REQUIRE_ESM' || e.code === 'ERR_REQUIRE_ASYNC_MODULE')) mod = await import(url.pathToFileURL(file).href);
    else throw e;
  }
"""
_END = r"""
})().catch((e) => { process.stderr.write(String((e && e.message) || e).split('\n')[0]); process.exit(1); });
"""


def run_node_json(file: Path, body: str, what: str) -> tuple[Any] | str:
    """``(value,)``: the JSON that ``body`` printed, run by Node in ``file``'s folder with the file loaded as ``mod``
    (`_LOAD`); or one line saying why not (``what`` names what it should have printed: "no settings")."""
    script = _LOAD + body + _END
    node = shutil.which("node")
    if node is None:
        return "node is not installed"
    try:
        proc = subprocess.run([node, "-e", script, str(file)], cwd=file.parent, capture_output=True, text=True,
                              timeout=NODE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"node failed ({exc})"
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no message"
        return f"node could not load it ({last})"
    try:
        return (json.loads(proc.stdout),)
    except ValueError:
        return f"node printed {what}"
