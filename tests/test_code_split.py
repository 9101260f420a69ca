"""Seed 000: an over-limit code block is cut at definitions (top level, then one level in), never mid-function.

Each page below is a Docusaurus-style section holding one realistic code block over 512 cl100k tokens whose
definitions each fit. `DEF_STARTS` lists, per language, the first line of every definition as an author sees it
(the decorator, attribute or doc comment above it when it has one): the only lines a chunk may start at inside
the block.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chunkscope.chunking.model import Chunk, Span
from chunkscope.chunking.registry import get_strategy
from chunkscope.chunking.strategy import Limits, Strategy
from chunkscope.cli import main
from chunkscope.document.loader import Document, decode_document, load_docs
from chunkscope.lint import ERROR, WARNING, lint_tree
from chunkscope.chunking.strategies.code_cuts import code_lines, definition_cuts, is_definition
from chunkscope.tokens import get_tokenizer

from .invariants import assert_trimmed_slices_cover_body

BUDGET = 512

PY_IK = '''import numpy as np
from dataclasses import dataclass


@dataclass
class IKResult:
    """Outcome of one inverse-kinematics solve."""
    q: np.ndarray
    converged: bool
    iterations: int
    error: float


class DampedLeastSquaresIK:
    """Damped least-squares inverse kinematics for a serial manipulator.

    The damping factor keeps the update bounded near singularities, where the
    plain pseudo-inverse of the Jacobian would produce huge joint velocities.
    """

    def __init__(self, dh_params, damping=0.05, tol=1e-4, max_iter=200):
        # Denavit-Hartenberg parameters, one row (a, alpha, d, theta_offset) per joint.
        self.dh = np.asarray(dh_params, dtype=float)
        self.damping = damping
        self.tol = tol
        self.max_iter = max_iter
        self.n = self.dh.shape[0]

    @staticmethod
    def _dh_transform(a, alpha, d, theta):
        """Homogeneous transform of one joint from its DH parameters."""
        ca, sa = np.cos(alpha), np.sin(alpha)
        ct, st = np.cos(theta), np.sin(theta)
        return np.array([
            [ct, -st * ca, st * sa, a * ct],
            [st, ct * ca, -ct * sa, a * st],
            [0.0, sa, ca, d],
            [0.0, 0.0, 0.0, 1.0],
        ])

    def forward(self, q):
        """Pose of the end effector and of every joint frame for joint angles q."""
        T = np.eye(4)
        frames = [T.copy()]
        for i in range(self.n):
            a, alpha, d, offset = self.dh[i]
            T = T @ self._dh_transform(a, alpha, d, q[i] + offset)
            frames.append(T.copy())
        return T, frames

    def jacobian(self, q):
        """Geometric Jacobian (6 x n) of the end effector at joint angles q."""
        T, frames = self.forward(q)
        p_end = T[:3, 3]

        J = np.zeros((6, self.n))
        for i in range(self.n):
            z = frames[i][:3, 2]
            p = frames[i][:3, 3]
            J[:3, i] = np.cross(z, p_end - p)
            J[3:, i] = z
        return J

    def pose_error(self, T_current, T_target):
        """Six-vector error: position difference and axis-angle orientation difference."""
        dp = T_target[:3, 3] - T_current[:3, 3]

        R_err = T_target[:3, :3] @ T_current[:3, :3].T
        angle = np.arccos(np.clip((np.trace(R_err) - 1.0) / 2.0, -1.0, 1.0))
        if np.isclose(angle, 0.0):
            return np.concatenate([dp, np.zeros(3)])
        axis = np.array([
            R_err[2, 1] - R_err[1, 2],
            R_err[0, 2] - R_err[2, 0],
            R_err[1, 0] - R_err[0, 1],
        ]) / (2.0 * np.sin(angle))
        return np.concatenate([dp, axis * angle])

    def solve(self, T_target, q0=None):
        """Iterate damped least-squares steps until the pose error is below tol."""
        q = np.zeros(self.n) if q0 is None else np.array(q0, dtype=float)
        err_norm = np.inf

        for it in range(1, self.max_iter + 1):
            T, _ = self.forward(q)
            e = self.pose_error(T, T_target)
            err_norm = float(np.linalg.norm(e))
            if err_norm < self.tol:
                return IKResult(q, True, it, err_norm)

            J = self.jacobian(q)
            # (J^T J + lambda^2 I) dq = J^T e, solved without forming an explicit inverse.
            A = J.T @ J + (self.damping ** 2) * np.eye(self.n)
            dq = np.linalg.solve(A, J.T @ e)
            q = q + dq
        return IKResult(q, False, self.max_iter, err_norm)


# Warm-started batch solving for a trajectory of targets.
async def solve_for_targets(solver, targets):
    """Solve a sequence of targets, warm-starting each from the previous solution."""
    q = None
    results = []

    for T in targets:
        res = solver.solve(T, q)
        results.append(res)
        q = res.q
    return results
'''

RS_CCD = '''use std::f64::consts::PI;
use std::fmt;

/// Why a solve gave up.
#[derive(Debug, Clone, PartialEq)]
pub enum IkError {
    Unreachable { distance: f64, reach: f64 },
    NoConvergence(usize),
}

/// A planar serial arm solved by cyclic coordinate descent (CCD).
#[derive(Debug, Clone)]
pub struct CcdSolver {
    pub lengths: Vec<f64>,
    pub tolerance: f64,
    pub max_iterations: usize,
}

impl CcdSolver {
    /// Creates a solver for links of the given lengths (metres).
    pub fn new(lengths: Vec<f64>) -> Self {
        Self { lengths, tolerance: 1e-4, max_iterations: 100 }
    }

    /// Rotates each joint in turn, from the wrist to the shoulder, to point the tip at the target.
    pub fn solve(&self, target: (f64, f64), initial: &[f64]) -> Result<Vec<f64>, IkError> {
        let distance = (target.0 * target.0 + target.1 * target.1).sqrt();
        if distance > self.reach() {
            return Err(IkError::Unreachable { distance, reach: self.reach() });
        }
        let mut angles = initial.to_vec();

        for _ in 0..self.max_iterations {
            for joint in (0..angles.len()).rev() {
                let points = self.forward(&angles);
                let (px, py) = points[joint];
                let (ex, ey) = points[points.len() - 1];

                let to_end = (ey - py).atan2(ex - px);
                let to_target = (target.1 - py).atan2(target.0 - px);
                angles[joint] = Self::wrap_angle(angles[joint] + to_target - to_end);
            }
            let tip = self.forward(&angles)[angles.len()];
            let error = ((tip.0 - target.0).powi(2) + (tip.1 - target.1).powi(2)).sqrt();
            if error < self.tolerance {
                return Ok(angles);
            }
        }
        Err(IkError::NoConvergence(self.max_iterations))
    }

    /// Positions of the base, every joint and the end effector for the given joint angles.
    pub fn forward(&self, angles: &[f64]) -> Vec<(f64, f64)> {
        let mut points = Vec::with_capacity(self.lengths.len() + 1);
        let (mut x, mut y, mut heading) = (0.0, 0.0, 0.0);
        points.push((x, y));

        for (length, angle) in self.lengths.iter().zip(angles) {
            heading += angle;
            x += length * heading.cos();
            y += length * heading.sin();
            points.push((x, y));
        }
        points
    }

    #[inline]
    fn wrap_angle(theta: f64) -> f64 {
        let mut t = theta % (2.0 * PI);
        if t > PI {
            t -= 2.0 * PI;
        } else if t < -PI {
            t += 2.0 * PI;
        }
        t
    }

    /// Total length of the arm: no target farther than this is reachable.
    pub(crate) fn reach(&self) -> f64 {
        self.lengths.iter().sum()
    }
}

impl fmt::Display for IkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IkError::Unreachable { distance, reach } => {
                write!(f, "target at {distance:.3} m is beyond the reach of {reach:.3} m")
            }
            IkError::NoConvergence(n) => write!(f, "no convergence after {n} iterations"),
        }
    }
}
'''

JS_FABRIK = '''import { Vector2 } from 'three';

/**
 * Clamp a value between lo and hi.
 */
export function clamp(value, lo, hi) {
  return Math.min(hi, Math.max(lo, value));
}

export const degToRad = (deg) => (deg * Math.PI) / 180;

// Wrap an angle into (-pi, pi].
const wrapAngle = (theta) => {
  let t = theta % (2 * Math.PI);
  if (t > Math.PI) t -= 2 * Math.PI;
  if (t <= -Math.PI) t += 2 * Math.PI;
  return t;
};

export class FabrikSolver {
  constructor(lengths, { tolerance = 1e-3, maxIterations = 50 } = {}) {
    this.lengths = lengths;
    this.tolerance = tolerance;
    this.maxIterations = maxIterations;
    this.reach = lengths.reduce((sum, l) => sum + l, 0);
  }

  solve(target, angles, base = new Vector2(0, 0)) {
    if (base.distanceTo(target) > this.reach) {
      throw new RangeError(`target is out of reach (${this.reach.toFixed(3)} m)`);
    }
    const points = this.forward(angles, base);
    const n = points.length - 1;

    for (let iter = 0; iter < this.maxIterations; iter += 1) {
      // Backward pass: pin the tip to the target and walk to the base.
      points[n].copy(target);
      for (let i = n - 1; i >= 0; i -= 1) {
        const dir = points[i].clone().sub(points[i + 1]).normalize();
        points[i].copy(points[i + 1]).addScaledVector(dir, this.lengths[i]);
      }

      // Forward pass: pin the base again and walk back to the tip.
      points[0].copy(base);
      for (let i = 1; i <= n; i += 1) {
        const dir = points[i].clone().sub(points[i - 1]).normalize();
        points[i].copy(points[i - 1]).addScaledVector(dir, this.lengths[i - 1]);
      }
      if (points[n].distanceTo(target) < this.tolerance) break;
    }
    return this.anglesOf(points);
  }

  // Joint positions for the given joint angles, base first.
  forward(angles, base = new Vector2(0, 0)) {
    const points = [base.clone()];
    let heading = 0;

    for (let i = 0; i < this.lengths.length; i += 1) {
      heading += angles[i];
      const prev = points[points.length - 1];
      points.push(new Vector2(
        prev.x + this.lengths[i] * Math.cos(heading),
        prev.y + this.lengths[i] * Math.sin(heading),
      ));
    }
    return points;
  }

  /** Joint angles that trace the given joint positions. */
  anglesOf(points) {
    const angles = [];
    let heading = 0;

    for (let i = 1; i < points.length; i += 1) {
      const dir = points[i].clone().sub(points[i - 1]);
      const absolute = Math.atan2(dir.y, dir.x);
      angles.push(wrapAngle(absolute - heading));
      heading = absolute;
    }
    return angles;
  }

  static fromChain(chain) {
    return new FabrikSolver(chain.map((link) => link.length));
  }
}

export default function createSolver(lengths) {
  return new FabrikSolver(lengths);
}
'''

#: The first line (stripped) of every definition of each block: the decorator, attribute or comment above it
#: when it has one. A chunk starting inside a block must start at one of these.
DEF_STARTS = {
    "python": {"import numpy as np", "@dataclass", "class DampedLeastSquaresIK:",
               "def __init__(self, dh_params, damping=0.05, tol=1e-4, max_iter=200):", "@staticmethod",
               "def forward(self, q):", "def jacobian(self, q):", "def pose_error(self, T_current, T_target):",
               "def solve(self, T_target, q0=None):", "# Warm-started batch solving for a trajectory of targets."},
    "rust": {"use std::f64::consts::PI;", "/// Why a solve gave up.",
             "/// A planar serial arm solved by cyclic coordinate descent (CCD).", "impl CcdSolver {",
             "/// Creates a solver for links of the given lengths (metres).",
             "/// Positions of the base, every joint and the end effector for the given joint angles.",
             "#[inline]", "/// Total length of the arm: no target farther than this is reachable.",
             "/// Rotates each joint in turn, from the wrist to the shoulder, to point the tip at the target.",
             "impl fmt::Display for IkError {"},
    "js": {"import { Vector2 } from 'three';", "/**", "export const degToRad = (deg) => (deg * Math.PI) / 180;",
           "// Wrap an angle into (-pi, pi].", "export class FabrikSolver {",
           "constructor(lengths, { tolerance = 1e-3, maxIterations = 50 } = {}) {",
           "// Joint positions for the given joint angles, base first.",
           "/** Joint angles that trace the given joint positions. */",
           "solve(target, angles, base = new Vector2(0, 0)) {", "static fromChain(chain) {",
           "export default function createSolver(lengths) {"},
}
CODE = {"python": PY_IK, "rust": RS_CCD, "js": JS_FABRIK}
#: The container each block is one level inside of: over the budget on its own, so it is cut at its methods.
CONTAINER = {"python": "class DampedLeastSquaresIK:", "rust": "impl CcdSolver {", "js": "export class FabrikSolver {"}


def count(text: str) -> int:
    return get_tokenizer("cl100k_base").count(text)


def page(lang: str, *, indent: str = "", wrap: str = "plain", newline: str = "\n") -> str:
    """A Docusaurus page with one section holding the block: at the top level, in a list item or an admonition."""
    fence = f"```{lang}\n{CODE[lang]}```"
    if indent:
        fence = "\n".join(indent + line if line else line for line in fence.split("\n"))
    body = {
        "plain": f"The solver below is what the lab uses:\n\n{fence}\n",
        "list": f"1. Read the solver:\n\n{fence}\n\n2. Run it on the lab arm.\n",
        "admonition": f":::tip The whole solver\n\n{fence}\n\n:::\n",
    }[wrap]
    text = (f"---\ntitle: Inverse kinematics\nsidebar_position: 3\n---\n# Chapter 3: Kinematics\n\n"
            f"## 3.2 Inverse Kinematics {{#inverse-kinematics}}\n\nEach solver turns a target pose into joint "
            f"angles.\n\n{body}\nThe solver converges in a few iterations when the target is reachable.\n")
    return text.replace("\n", newline)


def mkdoc(text: str, path: str = "docs/ch03-inverse-kinematics.md") -> Document:
    doc, problems = decode_document(text.encode("utf-8"), path)
    assert doc is not None and not problems
    return doc


def the_fence(doc: Document):
    return next(b for b in doc.structure.blocks if b.kind == "fence")


def line_at(text: str, pos: int) -> str:
    return text[text.rfind("\n", 0, pos) + 1:text.find("\n", pos)].strip()


def assert_cut_at_definitions(doc: Document, chunks: list[Chunk], lang: str) -> list[Chunk]:
    """Every chunk fits and is an exact slice; every chunk starting inside the fence starts at a definition."""
    assert_trimmed_slices_cover_body(doc, chunks)
    fence = the_fence(doc)
    inside = [c for c in chunks if fence.start < c.start < fence.end]
    assert inside, "the block is over the limit: it must be cut"
    for c in chunks:
        assert c.tokens == count(c.text) <= BUDGET, (c.index, c.tokens)
    for c in inside:
        assert line_at(doc.text, c.start) in DEF_STARTS[lang], f"chunk {c.index} starts mid-body: {c.text[:60]!r}"
        assert c.start == doc.text.index(line_at(doc.text, c.start), doc.text.rfind("\n", 0, c.start) + 1)
        # The chunk ending at this cut ends right after a definition (its last line is code, never a decorator).
        before = chunks[c.index - 1]
        assert not re.match(r"(@|#\[|///|/\*\*)", line_at(doc.text, before.end - 1)), before.text[-40:]
    return inside


# --- the strategy -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["python", "rust", "js"])
def test_an_over_limit_class_is_cut_at_its_methods(lang: str) -> None:
    code = CODE[lang]
    assert count(code) > BUDGET
    # The container (class / impl) alone is over the budget; each of its methods fits.
    head = code.index(CONTAINER[lang])
    nxt = min(code.find(s, head + 1) for s in ("\n\n\n", "\n}\n") if code.find(s, head + 1) > 0)
    assert count(code[head:nxt]) > BUDGET
    text = page(lang)
    doc = mkdoc(text)
    chunks = get_strategy("section-sentence").chunk(doc)
    inside = assert_cut_at_definitions(doc, chunks, lang)
    # At least one cut falls between two methods of the container, not only at top-level definitions.
    methods = [c for c in inside if c.text.startswith((" ", "def ", "pub fn", "/// Rotates", "/// Positions",
                                                       "#[inline]", "solve(", "// Joint", "/** Joint",
                                                       "/// Total", "/// Creates", "@staticmethod",
                                                       "constructor(", "static "))]
    assert methods, [c.text[:30] for c in inside]
    for c in inside:
        assert "split-fence" in c.warnings


@pytest.mark.parametrize("wrap,indent,newline", [
    ("list", "   ", "\n"),        # a fence indented inside a list item
    ("admonition", "", "\n"),     # a fence inside a ::: admonition
    ("plain", "", "\r\n"),        # Windows line endings
])
def test_definition_cuts_hold_for_indented_fences_admonitions_and_crlf(wrap: str, indent: str, newline: str) -> None:
    text = page("python", indent=indent, wrap=wrap, newline=newline)
    doc = mkdoc(text)
    chunks = get_strategy("section-sentence").chunk(doc)
    assert_cut_at_definitions(doc, chunks, "python")


def test_a_single_function_over_the_budget_falls_back_to_blank_lines_inside_it() -> None:
    """Only a definition that alone is over the budget is cut inside: at its blank lines, the rest at methods."""
    text = page("python")
    doc = mkdoc(text)
    pose_error, solve = text.index("    def pose_error(self"), text.index("    def solve(self")
    # pose_error(), the largest method but one, just fits; solve() does not.
    budget = count(text[pose_error:solve].strip()) + 1
    assert count(text[solve:text.index("\n\n\n", solve)]) > budget
    chunks = get_strategy("section-sentence", max_tokens=budget).chunk(doc)
    assert_trimmed_slices_cover_body(doc, chunks)
    assert all(c.tokens <= budget for c in chunks)
    fence = the_fence(doc)
    solve_end = text.index("\n\n\n", solve)
    for c in chunks:
        if not fence.start < c.start < fence.end:
            continue
        line = line_at(text, c.start)
        if solve < c.start < solve_end:
            # Inside the over-budget solve(): only at the start of a line after a blank line.
            assert text[:c.start].rstrip(" ").endswith("\n\n"), line
        else:
            assert line in DEF_STARTS["python"] or line.startswith(("def ", "@", "class ", "async def")), line


# --- lint and the command line ----------------------------------------------------------------------------------


class CutAt(Strategy):
    """A strategy cutting right before given lines, with seed 000's limit of 512 cl100k tokens."""

    name = "cut-at"
    description = "test strategy: cuts before each listed line"
    lines: tuple[str, ...] = ()

    def limits(self) -> Limits:
        return Limits("cl100k_base", BUDGET)

    def spans(self, doc) -> list[Span]:
        text = doc.text
        cuts = [doc.body_start, *sorted(text.index(x) for x in self.lines), len(text)]
        out = []
        for s, e in zip(cuts, cuts[1:]):
            while e > s and text[e - 1].isspace():
                e -= 1
            while s < e and text[s].isspace():
                s += 1
            out.append(Span(s, e, {}))
        return out


def lint_page(tmp_path: Path, text: str, lines: tuple[str, ...]):
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "ik.md").write_text(text, encoding="utf-8")
    strat = CutAt()
    strat.lines = lines
    report = lint_tree(load_docs(tmp_path / "docs"), strat, select="split-fence")
    return report.findings


def test_lint_warns_for_a_cut_between_definitions_and_errs_for_a_cut_mid_body(tmp_path: Path) -> None:
    text = page("python")
    at_defs = lint_page(tmp_path, text, ("    def jacobian(self, q):", "    def solve(self, T_target"))
    assert [(f.rule, f.severity, f.line) for f in at_defs] == [("split-fence", WARNING, 64)]
    msg = at_defs[0].message
    # Still plainly a split of the block, and why it is allowed.
    assert msg.startswith("chunk 0 ends inside the python code block at lines 13-123")
    assert "between definitions" in msg and "over the limit of 512" in msg and "lines 64, 92" in msg
    # One cut inside solve()'s body makes the block's finding an error, at that cut.
    mid = lint_page(tmp_path, text, ("    def jacobian(self, q):", "            J = self.jacobian(q)"))
    assert [(f.severity, f.line) for f in mid] == [(ERROR, 104)]
    assert "not at a definition" in mid[0].message
    # Between two methods of a class that fits whole: the seed keeps that class whole, so it is an error too.
    pose = "class Pose:\n    def __init__(self, T):\n        self.T = T\n\n    def position(self):\n        return 1\n\n\n"
    with_pose = text.replace("# Warm-started", pose + "# Warm-started")
    split_pose = lint_page(tmp_path, with_pose, ("    def jacobian(self, q):", "    def position(self):"))
    line = with_pose[:with_pose.index("    def position(self):")].count("\n") + 1
    assert [(f.severity, f.line) for f in split_pose] == [(ERROR, line)]
    assert "inside a definition that fits in one chunk" in split_pose[0].message
    # A block that fits in one chunk but is split anyway stays an error, whatever line the cut is at.
    small = page("python").replace(CODE["python"], CODE["python"][:CODE["python"].index("class Damped")])
    fits = lint_page(tmp_path, small, ("@dataclass",))
    assert [(f.severity, f.line) for f in fits] == [(ERROR, 18)]


def test_chunk_and_lint_agree_on_the_pages(tmp_path: Path, capsys) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for lang in CODE:
        (docs / f"ik-{lang}.md").write_text(page(lang), encoding="utf-8")
    assert main(["chunk", str(docs), "-s", "section-sentence", "--format", "jsonl"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    code = main(["lint", str(docs), "-s", "section-sentence", "--select", "split-fence,oversize", "--format", "json"])
    findings = json.loads(capsys.readouterr().out)
    assert code == 0, findings  # cuts between definitions are what seed 000 asks for: no error
    for lang in CODE:
        path = str(docs / f"ik-{lang}.md")
        doc = load_docs(docs / f"ik-{lang}.md").documents[0]
        fence = the_fence(doc)
        mine = [r for r in rows if r["path"] == f"ik-{lang}.md"]
        starts = [r["start_line"] for r in mine if fence.start < r["start"] < fence.end]
        assert starts
        for r in mine:
            assert r["tokens"] <= BUDGET and "oversize" not in r["warnings"]
            assert line_at(doc.text, r["start"]) in DEF_STARTS[lang] or not fence.start < r["start"] < fence.end
        # Every chunk that holds a piece of the split block says so; lint names the same block and cut lines.
        cut = [r for r in mine if r["start"] < fence.end and r["end"] > fence.start]
        assert all("split-fence" in r["warnings"] for r in cut)
        found = [f for f in findings if f["path"] == path]
        assert [(f["rule"], f["severity"], f["line"]) for f in found] == [("split-fence", "warning", starts[0])]
        assert f"lines {', '.join(map(str, starts))}" in found[0]["message"] or \
            (len(starts) == 1 and f"line {starts[0]}" in found[0]["message"])


# --- the language rules -----------------------------------------------------------------------------------------

DEFINITIONS = [
    "async def fetch(self):", "export default function createSolver(lengths) {", "export const f = (a) => a + 1;",
    "const wrap = async (t) => {", "const h = x => x * 2;", "constructor(a, b) {", "static from(x) {", "get size() {",
    "#step() {", "render(): JSX.Element {", "pub(crate) fn reach(&self) -> f64 {", "impl<T: Clone> Foo<T> {",
    "const fn zero() -> u8 {", "func (r *Robot) Solve(t Pose) error {", "type Robot struct {",
    "private static double[] solve(double[] q) {", "static void helper(void)",
    "std::vector<double> solve(const Pose& p) const {", "namespace kin {", "export interface Props {",
]
NOT_DEFINITIONS = [
    "mod = a % b", "module = load(x)", "return foo(x)", "if (x) {", "} else if (x) {", "await solver.solve(t)",
    "match page_title(x) {", "F: FnOnce() -> T + Send + 'static,", "describe('ik', () => {",
    "async with lock(x) as y:", "defer f.Close()", "throw new Error(x)", "x.then(() => {", "union = a | b",
]


@pytest.mark.parametrize("line", DEFINITIONS)
def test_definition_lines(line: str) -> None:
    assert is_definition(line)


@pytest.mark.parametrize("line", NOT_DEFINITIONS)
def test_statements_are_not_definitions(line: str) -> None:
    assert not is_definition(line)


def cuts_of(code: str, margin: int = 0) -> list[str]:
    """The first lines of the pieces `definition_cuts` makes of ``code`` (a fence's content, fence lines included)."""
    starts = [0] + [m.end() for m in re.finditer("\n", code)][:-1]
    lines = code_lines(code, starts, 0, len(code), margin)
    return [code[c:code.find("\n", c)].strip() for c in definition_cuts(lines)]


def test_cuts_move_over_decorators_attributes_and_comments_but_never_split_a_signature() -> None:
    py = ('```python\nimport math\n\n@app.get(\n    "/ik",\n)\ndef ik():\n    return 1\n\n\n'
          '# Demo: solve once.\nq = ik()\nprint(q)\n```\n')
    # The decorator's arguments span lines: the cut goes above all of it; the script after the last function
    # is a piece of its own.
    assert cuts_of(py) == ['@app.get(', '# Demo: solve once.']
    rs = ("```rust\nuse std::fmt;\n\nimpl<T> Show for Wrapper<T>\nwhere\n    T: fmt::Debug,\n{\n    fn show(&self) {}\n}\n"
          "/*\n  Why two impls.\n*/\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn shows() {}\n}\n```\n")
    assert cuts_of(rs) == ["impl<T> Show for Wrapper<T>", "/*"]
    quoted = "```python\n> x = 1\n>\n> def f():\n>     return 2\n```\n"
    assert cuts_of(quoted, margin=2) == ["> def f():"]


def test_a_docstring_mentioning_a_definition_is_not_one() -> None:
    py = ('```python\nclass A:\n    def m(self):\n        """Return the\n        function of the angles.\n\n'
          '        class of solutions: see below.\n        """\n        return 1\n\n    def n(self):\n        pass\n```\n')
    # One class, so no top-level cut: cut one level in, before each method, never inside m()'s docstring.
    assert cuts_of(py) == ["def m(self):", "def n(self):"]
    # A single function has no boundary at all: its docstring's "function of …" and "class of …" start nothing.
    one = py[py.index("    def m"):py.index("\n    def n")] + "\n```\n"
    assert cuts_of("```python\n" + one) == []


def test_lint_on_an_over_limit_block_with_no_definitions_reports_a_mid_body_cut(tmp_path: Path, capsys) -> None:
    # 400 lines of plain statements: no definition boundary at any level. Asking for the boundaries one level in
    # used to ask the same question of the same lines again, until Python's recursion limit (exit 3).
    docs = tmp_path / "docs"
    docs.mkdir()
    body = "value = compute(1, 2, 3)\n" * 400
    (docs / "flat.md").write_text(f"# Flat\n\n```python\n{body}```\n", encoding="utf-8")
    code = main(["lint", str(docs), "-s", "section-sentence", "--select", "split-fence", "--format", "json"])
    findings = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [(f["rule"], f["severity"]) for f in findings][:1] == [("split-fence", "error")]
