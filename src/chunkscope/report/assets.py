"""The page's own CSS and JavaScript, inlined into every report (nothing is fetched when the page is viewed).

The script only reads ``data-*`` attributes and toggles classes: no document text ever reaches it as code.
"""

from __future__ import annotations

import base64
import hashlib

CSS = """
:root { --a: #eef5ff; --b: #fff6e8; --edge: #5477b5; --err: #c0392b; --warn: #b7791f; --ovl: #f6d365; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d232b; background: #fafbfc; }
header.top { position: sticky; top: 0; z-index: 2; background: #fff; border-bottom: 1px solid #d5dbe3;
  padding: 8px 16px; }
h1 { font-size: 18px; margin: 0 0 4px; }
h2 { font-size: 15px; margin: 0; font-family: ui-monospace, monospace; }
main { padding: 8px 16px 40px; }
section.tree { padding: 8px 16px 0; }
table.sum { border-collapse: collapse; margin: 6px 0; }
table.sum td, table.sum th { border: 1px solid #d5dbe3; padding: 2px 8px; text-align: right; }
table.sum th { background: #f1f4f8; text-align: left; }
.rules td:first-child { text-align: left; font-family: ui-monospace, monospace; }
label.filter { margin-right: 12px; }
section.file { background: #fff; border: 1px solid #d5dbe3; border-radius: 6px; margin: 14px 0; padding: 8px 10px; }
section.file.hidden, .finding.hidden { display: none; }
p.fsum { margin: 2px 0 8px; color: #4a5563; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; font: 12.5px/1.45 ui-monospace, monospace; }
pre.gap { color: #8a94a3; background: repeating-linear-gradient(45deg, #fff, #fff 6px, #f3f4f6 6px, #f3f4f6 12px); }
div.chunk { border-top: 3px solid var(--edge); margin: 0; padding: 0 6px 4px; }
div.chunk.b0 { background: var(--a); }
div.chunk.b1 { background: var(--b); }
div.chunk.dim { opacity: .35; }
div.chead { font-size: 12px; color: #33415c; padding: 2px 0; }
div.chead .over { color: var(--err); font-weight: 600; }
div.chead .warn { color: var(--warn); }
mark.ovl { background: var(--ovl); outline: 1px dashed #b58900; }
div.finding { margin: 2px 0 4px; padding: 2px 8px; border-left: 4px solid var(--warn); background: #fffbea;
  font-size: 12.5px; }
div.finding.error { border-left-color: var(--err); background: #fdecea; }
div.finding code { font-weight: 600; }
.muted { color: #6b7480; }
"""

JS = """
(function () {
  "use strict";
  var select = document.getElementById("rule-filter");
  var files = Array.prototype.slice.call(document.querySelectorAll("section.file"));
  function has(el, rule) {
    return (" " + (el.getAttribute("data-rules") || "") + " ").indexOf(" " + rule + " ") >= 0;
  }
  function apply() {
    var rule = select.value;
    var shown = 0;
    files.forEach(function (file) {
      var keep = rule === "" || (rule === "*" ? file.getAttribute("data-rules") !== "" : has(file, rule));
      file.classList.toggle("hidden", !keep);
      if (keep) { shown += 1; }
      file.querySelectorAll("div.chunk").forEach(function (chunk) {
        var match = rule === "" || (rule === "*" ? chunk.getAttribute("data-rules") !== "" : has(chunk, rule));
        chunk.classList.toggle("dim", !match);
      });
      file.querySelectorAll("div.finding").forEach(function (f) {
        var r = f.getAttribute("data-rule");
        f.classList.toggle("hidden", !(rule === "" || rule === "*" || r === rule));
      });
    });
    document.getElementById("shown").textContent = shown + " of " + files.length + " files shown";
  }
  select.addEventListener("change", apply);
  apply();
  document.documentElement.setAttribute("data-ready", "1");
})();
"""


def csp_hash(source: str) -> str:
    """The Content-Security-Policy source for exactly this inline element's text (``'sha256-…'``)."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


#: Only the page's own style and script run; nothing may be loaded (no image, font, frame or connection), so a
#: hostile document cannot reach the network or run code even if an escape were missed.
CSP = (f"default-src 'none'; style-src {csp_hash(CSS)}; script-src {csp_hash(JS)}; img-src 'none'; "
       "base-uri 'none'; form-action 'none'")
