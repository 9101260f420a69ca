"""The literal parts of a JavaScript or TypeScript Docusaurus config, read without running it.

A ``docusaurus.config.js`` is code: running it needs Node and the site's ``node_modules`` (it imports
``prism-react-renderer`` and the like), and running a tree's code is allowed only where the user says so. What
Docusaurus needs from it is mostly literals: ``url: 'https://…'``, ``trailingSlash: true``, ``exclude: ['…']``.
This module parses the file with tree-sitter (a real JavaScript/TypeScript grammar, no regex) and evaluates the
literal forms only: strings, template strings without substitutions, numbers, booleans, arrays, objects, and
names bound by a top-level ``const``. Anything else is `Unread`, kept with its source text so the caller can say
what it could not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: Escapes of a JavaScript string literal other than the hex ones (\\u and \\x followed by hex digits).
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
_UNICODE_ESCAPE = re.compile(r"\\(?:u\{([0-9a-fA-F]+)\}|u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|(.))", re.S)


class JsSyntaxError(Exception):
    """The config could not be parsed (or no parser is installed); one line, shown as is."""


@dataclass(frozen=True, slots=True)
class Unread:
    """A value that is not a literal (a call, an environment variable, a spread): its source text."""

    source: str


def _unescape(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        code = m.group(1) or m.group(2) or m.group(3)
        if code:
            return chr(int(code, 16))
        c = m.group(4)
        return "" if c == "\n" else _ESCAPES.get(c, c)

    return _UNICODE_ESCAPE.sub(one, body)


class _Reader:
    """Evaluates literal expressions of one parsed file, resolving names bound by top-level ``const``."""

    def __init__(self, source: bytes, root: Any) -> None:
        self.source = source
        self.root = root
        self.names: dict[str, Any] = {}
        for stmt in root.named_children:
            decl = stmt.child_by_field_name("declaration") if stmt.type == "export_statement" else stmt
            if decl is not None and decl.type in ("lexical_declaration", "variable_declaration"):
                for d in decl.named_children:
                    name, value = d.child_by_field_name("name"), d.child_by_field_name("value")
                    if d.type == "variable_declarator" and name is not None and value is not None \
                            and name.type == "identifier":
                        self.names[self.text(name)] = value

    def text(self, node: Any) -> str:
        return self.source[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def value(self, node: Any, depth: int = 0) -> Any:
        """The literal value of an expression node (dicts, lists, str, float/int, bool, None), or `Unread`."""
        if depth > 40:  # a name bound to itself through others: not a literal
            return Unread(self.text(node))
        t = node.type
        if t in ("parenthesized_expression", "as_expression", "satisfies_expression", "non_null_expression",
                 "await_expression"):
            return self.value(node.named_children[0], depth + 1)
        if t == "string":
            return _unescape(self.text(node)[1:-1])
        if t == "template_string":
            if any(c.type == "template_substitution" for c in node.named_children):
                return Unread(self.text(node))
            return _unescape(self.text(node)[1:-1])
        if t == "number":
            raw = self.text(node).replace("_", "")
            try:
                return int(raw, 0) if re.fullmatch(r"0[xob][0-9a-f]+|\d+", raw, re.I) else float(raw)
            except ValueError:
                return Unread(raw)
        if t in ("true", "false"):
            return t == "true"
        if t in ("null", "undefined"):
            return None
        if t == "identifier":
            name = self.text(node)
            if name == "undefined":
                return None
            bound = self.names.get(name)
            return self.value(bound, depth + 1) if bound is not None else Unread(name)
        if t == "array":
            return [self.value(c, depth + 1) for c in node.named_children if c.type != "comment"]
        if t == "object":
            return self._object(node, depth)
        return Unread(self.text(node))

    def _object(self, node: Any, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for c in node.named_children:
            if c.type == "pair":
                key_node, value_node = c.child_by_field_name("key"), c.child_by_field_name("value")
                if key_node is None or value_node is None:
                    continue
                if key_node.type == "string":
                    key = _unescape(self.text(key_node)[1:-1])
                elif key_node.type in ("property_identifier", "number"):
                    key = self.text(key_node)
                else:  # a computed key: [name]: …
                    out.setdefault("...", []).append(Unread(self.text(c)))
                    continue
                out[key] = self.value(value_node, depth + 1)
            elif c.type == "shorthand_property_identifier":
                name = self.text(c)
                bound = self.names.get(name)
                out[name] = self.value(bound, depth + 1) if bound is not None else Unread(name)
            elif c.type in ("spread_element", "method_definition"):
                # A spread may set any key: a key it could set is unknown, not absent.
                out.setdefault("...", []).append(Unread(self.text(c)))
        return out

    def exported(self) -> Any:
        """The value ``module.exports`` or ``export default`` gives: an object, a name bound to one, or a
        (possibly async) function whose last ``return`` gives one. Unread when there is no such literal."""
        for stmt in reversed(self.root.named_children):
            target = None
            if stmt.type == "expression_statement":
                expr = stmt.named_children[0] if stmt.named_children else None
                if expr is not None and expr.type == "assignment_expression":
                    left = expr.child_by_field_name("left")
                    if left is not None and self.text(left).replace(" ", "") in ("module.exports", "exports.default"):
                        target = expr.child_by_field_name("right")
            elif stmt.type == "export_statement" and any(c.type == "default" for c in stmt.children):
                target = stmt.child_by_field_name("value") or stmt.child_by_field_name("declaration")
            if target is not None:
                return self._config_value(target, 0)
        return Unread("(no module.exports or export default)")

    def _config_value(self, node: Any, depth: int) -> Any:
        if node.type == "identifier" and depth < 10:
            bound = self.names.get(self.text(node))
            if bound is None:
                fn = self._function_named(self.text(node))
                return self._config_value(fn, depth + 1) if fn is not None else Unread(self.text(node))
            return self._config_value(bound, depth + 1)
        if node.type in ("parenthesized_expression", "as_expression", "satisfies_expression"):
            return self._config_value(node.named_children[0], depth + 1)
        if node.type in ("arrow_function", "function_expression", "function_declaration", "function"):
            body = node.child_by_field_name("body")
            if body is None:
                return Unread(self.text(node))
            if body.type != "statement_block":
                return self._config_value(body, depth + 1)
            returns = [s for s in body.named_children if s.type == "return_statement" and s.named_children]
            if not returns:
                return Unread(self.text(node)[:60])
            return self._config_value(returns[-1].named_children[0], depth + 1)
        return self.value(node)

    def _function_named(self, name: str) -> Any:
        for stmt in self.root.named_children:
            decl = stmt.child_by_field_name("declaration") if stmt.type == "export_statement" else stmt
            if decl is not None and decl.type == "function_declaration":
                n = decl.child_by_field_name("name")
                if n is not None and self.text(n) == name:
                    return decl
        return None


def read_exported_literal(source: bytes, typescript: bool) -> Any:
    """The exported config of a JS (or TS) module as literals: a dict whose non-literal values are `Unread`.

    Raises:
        JsSyntaxError: tree-sitter or its grammar is not installed, or the file does not parse.
    """
    try:
        from tree_sitter import Language, Parser

        if typescript:
            import tree_sitter_typescript as grammar

            language = Language(grammar.language_typescript())
        else:
            import tree_sitter_javascript as js_grammar

            language = Language(js_grammar.language())
    except ImportError as exc:
        raise JsSyntaxError(f"no JavaScript parser installed ({exc.name})") from exc
    tree = Parser(language).parse(source)
    if tree.root_node.has_error:
        bad = _first_error(tree.root_node)
        raise JsSyntaxError(f"does not parse as {'TypeScript' if typescript else 'JavaScript'}"
                            f" (line {bad.start_point[0] + 1})")
    return _Reader(source, tree.root_node).exported()


def _first_error(node: Any) -> Any:
    for c in node.children:
        if c.type == "ERROR" or c.is_missing:
            return c
        if c.has_error:
            return _first_error(c)
    return node
