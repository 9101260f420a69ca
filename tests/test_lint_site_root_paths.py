"""Lint's ``path:line`` names the file on disk when DOCS is a Docusaurus site root read through its docs folder.

Found on prettier's docs (MIT): the site lives in ``website/`` and its docs plugin reads ``path: "../docs"``;
``chunkscope lint website`` printed ``website/api.md:181`` for ``docs/api.md``, a path no editor can open.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from chunkscope.cli import main

PAGE = "# Page\n\n## Setup\n\n```js\n" + "\n".join(f"const value{i} = compute({i});" for i in range(40)) + "\n```\n"


@pytest.mark.parametrize(("site", "docs_path", "config_path"), [
    ("website", "docs", '"../docs"'),  # docs beside the site folder (prettier)
    ("site", "site/guides", '"guides"'),  # docs inside it under another name
    ("site", "site/docs", None),  # Docusaurus' default docs/
])
def test_every_printed_path_is_a_file(tmp_path, monkeypatch, capsys, site, docs_path, config_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / site).mkdir()
    plugin = f"docs: {{ path: {config_path} }}" if config_path else "docs: {}"
    (tmp_path / site / "docusaurus.config.js").write_text(
        f'module.exports = {{ title: "t", url: "https://example.com", baseUrl: "/", '
        f'presets: [["classic", {{ {plugin} }}]] }};\n', encoding="utf-8")
    folder = tmp_path / docs_path
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "api.md").write_text(PAGE, encoding="utf-8")
    rc = main(["lint", site, "-s", "recursive", "-p", "chunk_size=60", "-p", "chunk_overlap=0"])
    out = capsys.readouterr().out
    paths = re.findall(r"^(\S+?):\d+:\d+: ", out, re.M)
    assert rc == 1 and paths, out
    for p in paths:
        assert (tmp_path / p).is_file(), f"{p} is not a file (from {out.splitlines()[0]})"
    assert {Path(p).resolve() for p in paths} == {(folder / "api.md").resolve()}
