#!/usr/bin/env python3
"""Enforce size limits on the C++ sources under src/ and apps/.

Rules (defaults; both limits can be changed on the command line):
  1. no source file (.cpp, .hpp, .h, .c) has more than 600 lines;
  2. no function body is longer than 100 lines, counted from the line holding its
     opening brace to the line holding its closing brace, inclusive.  Free functions,
     member functions (inline in a class body or out of line), constructors and
     destructors count; a lambda is part of the function that holds it.

An exceptions file (by default tests/layering/size_exceptions.txt under --root, when it
exists) may raise the limit for named items:

  function <path>:<name> <max-lines> <reason...>
  file <path> <max-lines> <reason...>

An exception that is no longer needed (the item is within the default limit or is gone)
is itself a failure, so the list cannot rot.

Usage:
  check_sizes.py --root <repo root> [--exceptions <file>] [--max-file-lines 600]
                 [--max-function-lines 100] [--report] [--list]
  check_sizes.py --self-test

Exit status: 0 clean, 1 violations (one line each on stdout), 2 usage or input errors.

Standard library only: the check runs with the system python3 in CI.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from bisect import bisect_right
from dataclasses import dataclass

EXTENSIONS = (".cpp", ".hpp", ".h", ".c")
SOURCE_DIRS = ("src", "apps")
DEFAULT_EXCEPTIONS = os.path.join("tests", "layering", "size_exceptions.txt")
REPORT_FUNCTIONS = 25
REPORT_FILE_LINES = 400


# --------------------------------------------------------------------------------------
# Lexing: blank out comments, literals and preprocessor lines, keeping every newline and
# every character's position, so offsets and line numbers in the result match the source.
# --------------------------------------------------------------------------------------

_RAW_PREFIXES = ("R", "u8R", "uR", "UR", "LR")
_IDENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _blank(s: str) -> str:
    return "".join(ch if ch == "\n" else " " for ch in s)


def strip_code(text: str) -> str:
    """Return text with comments and the contents of string and character literals
    replaced by spaces (quotes kept), and preprocessor directives blanked."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = i
            while j < n and text[j] != "\n":
                # a backslash at the end of the line continues a // comment
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                j += 1
            out.append(_blank(text[i:j]))
            i = j
        elif c == "/" and nxt == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(_blank(text[i:j]))
            i = j
        elif c == '"':
            k = i
            while k > 0 and text[k - 1] in _IDENT_CHARS:
                k -= 1
            prefix = text[k:i]
            if prefix in _RAW_PREFIXES:
                open_paren = text.find("(", i + 1, i + 18)
                delim = text[i + 1 : open_paren] if open_paren >= 0 else None
                if delim is not None and not re.search(r'[\s\\)"]', delim):
                    close = text.find(")" + delim + '"', open_paren + 1)
                    j = n if close < 0 else close + len(delim) + 2
                    out.append('"' + _blank(text[i + 1 : j - 1]) + ('"' if close >= 0 else ""))
                    i = j
                    continue
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n)
            if j < n and text[j] == '"':
                out.append('"' + _blank(text[i + 1 : j]) + '"')
                i = j + 1
            else:  # unterminated: blank to the end of the line
                out.append('"' + _blank(text[i + 1 : j]))
                i = j
        elif c == "'":
            # A digit separator (1'000'000) when the token before it is a number.
            k = i
            while k > 0 and (text[k - 1] in _IDENT_CHARS or text[k - 1] in ".'"):
                k -= 1
            if k < i and text[k].isdigit():
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != "'" and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n)
            if j < n and text[j] == "'":
                out.append("'" + _blank(text[i + 1 : j]) + "'")
                i = j + 1
            else:
                out.append("'" + _blank(text[i + 1 : j]))
                i = j
        else:
            out.append(c)
            i += 1
    code = "".join(out)

    # Preprocessor directives, with their continuation lines.
    lines = code.split("\n")
    continued = False
    for idx, line in enumerate(lines):
        if continued or line.lstrip().startswith("#"):
            continued = line.rstrip().endswith("\\")
            lines[idx] = " " * len(line)
        else:
            continued = False
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Classifying the text in front of a '{' at namespace or class scope.
# --------------------------------------------------------------------------------------

_QUAL_TAIL = re.compile(
    r"^(?:\s*(?:const\b|volatile\b|&&|&|noexcept\b|throw\b|override\b|final\b|mutable\b|"
    r"constexpr\b|consteval\b|try\b|\(\)|\[\[[^\]]*\]\]|__attribute__\b|->.*|requires\b.*))*"
    r"\s*$",
    re.S,
)
# Words that can stand in front of a '(' without it being a parameter list.
_SKIP_WORDS = frozenset(
    "noexcept throw decltype requires alignas __attribute__ __declspec sizeof alignof "
    "typeid static_assert".split()
)
_NOT_FUNCTIONS = frozenset("if for while switch catch return else do".split())
_ACCESS = re.compile(r"^\s*(?:public|private|protected)\s*:(?!:)")
_ATTRIBUTE = re.compile(r"^\s*\[\[.*?\]\]")
_OPERATOR_NAME = re.compile(
    r"((?:[\w~]+(?:<[^<>;]*>)?\s*::\s*)*operator\b\s*"
    r"(?:\(\s*\)|\[\s*\]|(?:new|delete)\s*(?:\[\s*\])?|[^\w\s()]+|[\w\s:<>*&]+?))\s*$"
)
_PLAIN_NAME = re.compile(r"((?:\w+(?:<[^<>;]*>)?\s*::\s*)*~?\w+)\s*$")


def _groups(s: str) -> list[tuple[int, int]] | None:
    """Top-level (...) groups of s as (open, close) offsets; None when (), [] or {}
    are unbalanced (the '{' is then inside an expression)."""
    stack: list[str] = []
    groups = []
    start = 0
    pairs = {")": "(", "]": "[", "}": "{"}
    for k, ch in enumerate(s):
        if ch in "([{":
            if not stack and ch == "(":
                start = k
            stack.append(ch)
        elif ch in ")]}":
            if not stack or stack[-1] != pairs[ch]:
                return None
            stack.pop()
            if not stack and ch == ")":
                groups.append((start, k))
    return None if stack else groups


def _top_level_positions(s: str, pattern: re.Pattern[str]) -> list[int]:
    """Offsets of matches of pattern that lie outside any (), [] or {}."""
    depth_at = []
    depth = 0
    for ch in s:
        if ch in "([{":
            depth_at.append(depth)
            depth += 1
        elif ch in ")]}":
            depth -= 1
            depth_at.append(depth)
        else:
            depth_at.append(depth)
    return [m.start() for m in pattern.finditer(s) if depth_at[m.start()] == 0]


def _collapse_groups(s: str) -> str:
    """Replace every outermost (...) with ()."""
    out = []
    depth = 0
    for ch in s:
        if ch == "(":
            if depth == 0:
                out.append("()")
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _strip_template_headers(s: str) -> str:
    """Drop leading attributes, access specifiers and template<...> headers."""
    while True:
        s = s.lstrip()
        m = _ATTRIBUTE.match(s) or _ACCESS.match(s)
        if m:
            s = s[m.end() :]
            continue
        m = re.match(r"template\s*<", s)
        if not m:
            return s
        depth, paren, k = 1, 0, m.end()
        while k < len(s) and depth:
            ch = s[k]
            if ch == "(":
                paren += 1
            elif ch == ")":
                paren -= 1
            elif paren == 0 and ch == "<":
                depth += 1
            elif paren == 0 and ch == ">":
                depth -= 1
            k += 1
        s = s[k:]


def _declared_name(s: str, groups: list[tuple[int, int]]) -> str | None:
    """The name in front of the parameter list of a function head s, or None when s
    is not a function head (its last parameter list must be followed only by
    qualifiers, a trailing return type or a requires clause)."""
    for open_, close in reversed(groups):
        head = s[:open_].rstrip()
        m = _OPERATOR_NAME.search(head)
        if m:
            name = m.group(1)
        else:
            m = _PLAIN_NAME.search(head)
            if not m:
                return None
            name = m.group(1)
            last_word = re.search(r"~?\w+$", name).group(0)
            if last_word in _SKIP_WORDS:
                continue  # noexcept(...), decltype(...), __attribute__((...)), ...
            if last_word in _NOT_FUNCTIONS or last_word[0].isdigit():
                return None
        if not _QUAL_TAIL.match(_collapse_groups(s[close + 1 :])):
            return None
        return re.sub(r"\s+", "", name)
    return None


_CATCH = re.compile(r"\s*catch\s*\(.*\)\s*", re.S)
_ASSIGN = re.compile(r"(?<![=!<>+\-*/%&|^])=(?!=)")
_SINGLE_COLON = re.compile(r"(?<!:):(?!:)")


def classify(preamble: str) -> tuple[str, str | None]:
    """Classify a '{' met at namespace or class scope by the text in front of it.

    Returns (kind, name): kind is "namespace", "extern", "enum", "class" (name = the
    class name, None for an anonymous one), "function" (name = the declared name)
    or "other" (a brace initialiser or anything else that is not a scope of its own)."""
    s = " ".join(preamble.split())
    s = _strip_template_headers(s)
    if re.match(r"(?:inline\s+)?namespace\b", s):
        return "namespace", None
    if re.fullmatch(r'extern\s*"[^"]*"\s*', s):
        return "extern", None
    groups = _groups(s)
    if groups is None:
        return "other", None  # e.g. the braces of f({1, 2}) at namespace scope

    # A variable whose initialiser is a lambda: its body is measured as a function.
    no_ops = re.sub(r"\boperator\s*[^\w\s(]+", "operator@", s)
    assigns = _top_level_positions(no_ops, _ASSIGN)
    if assigns:
        lhs, rhs = s[: assigns[0]], s[assigns[0] + 1 :].lstrip()
        m = re.search(r"(\w+)\s*$", lhs)
        if rhs.startswith("[") and m:
            return "function", m.group(1)
        return "other", None

    if groups:
        # Constructor with a member initialiser list: "Foo(int a) : a_(a), b_{b} {".
        for colon in _top_level_positions(s, _SINGLE_COLON):
            head = s[:colon]
            head_groups = [g for g in groups if g[1] < colon]
            name = _declared_name(head, head_groups) if head_groups else None
            is_class = re.match(r"(class|struct|union|enum)\b", head)
            if name and s.rstrip()[-1:] in ")}." and not is_class:
                return "function", name
            break  # only the first top-level ':' can start an initialiser list
        name = _declared_name(s, groups)
        if name:
            return "function", name

    m = re.match(
        r"(?:typedef\s+)?(?:(?:static|const|constexpr|inline)\s+)*"
        r"(class|struct|union|enum)\b(.*)",
        s,
    )
    if m:
        if m.group(1) == "enum":
            return "enum", None
        head = _SINGLE_COLON.split(m.group(2), maxsplit=1)[0]
        head = re.sub(r"\[\[.*?\]\]|\balignas\s*\([^)]*\)|\bfinal\b", " ", head)
        head = re.sub(r"\s*<[^{]*>", "", head)  # template arguments of a specialisation
        words = re.findall(r"[\w:]+", head)
        if not words:
            return "class", None  # anonymous
        # "struct stat st {}" declares a variable; "class EXPORT_MACRO Name" does not.
        if len(words) > 1 and not all(re.fullmatch(r"[A-Z][A-Z0-9_]*", w) for w in words[:-1]):
            return "other", None
        return "class", words[-1]
    return "other", None


# --------------------------------------------------------------------------------------
# Finding the functions in a file.
# --------------------------------------------------------------------------------------


@dataclass
class Function:
    name: str
    start: int  # line of the opening brace, 1-based
    end: int  # line of the closing brace

    @property
    def length(self) -> int:
        return self.end - self.start + 1


@dataclass
class _Scope:
    classes: list[str]  # enclosing class names, outermost first
    buf: list[str]


def _matching_brace(code: str, i: int) -> int | None:
    depth = 0
    for k in range(i, len(code)):
        ch = code[k]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return k
    return None


def find_functions(source: str, warnings: list[str] | None = None) -> list[Function]:
    """All function bodies in a C/C++ source text, in order of appearance."""
    code = strip_code(source)
    newlines = [k for k, ch in enumerate(code) if ch == "\n"]

    def line_of(offset: int) -> int:
        return bisect_right(newlines, offset - 1) + 1

    functions: list[Function] = []
    last_function: Function | None = None  # the one a function-try-block handler extends
    stack = [_Scope([], [])]
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        top = stack[-1]
        if c == ";":
            top.buf = []
        elif c == "{":
            kind, name = classify("".join(top.buf))
            if kind in ("function", "other"):
                end = _matching_brace(code, i)
                if end is None:
                    if warnings is not None:
                        warnings.append(f"line {line_of(i)}: unbalanced '{{'")
                    end = n - 1
                if kind == "function":
                    qualified = "::".join(top.classes + [name])
                    functions.append(Function(qualified, line_of(i), line_of(end)))
                    top.buf = []
                    last_function = functions[-1]
                elif last_function is not None and _CATCH.fullmatch("".join(top.buf)):
                    last_function.end = line_of(end)  # a handler of a function-try-block
                    top.buf = []
                else:
                    top.buf.append("{}")  # a brace initialiser: part of the declaration
                i = end + 1
                continue
            classes = top.classes + [name or "(anonymous)"] if kind == "class" else top.classes
            top.buf = []
            stack.append(_Scope(classes, []))
        elif c == "}":
            if len(stack) > 1:
                stack.pop()
                stack[-1].buf = []
            elif warnings is not None:
                warnings.append(f"line {line_of(i)}: unmatched '}}'")
        else:
            top.buf.append(c)
        i += 1
    if len(stack) > 1 and warnings is not None:
        warnings.append("unclosed namespace or class at end of file")
    return functions


def count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


# --------------------------------------------------------------------------------------
# Exceptions.
# --------------------------------------------------------------------------------------


@dataclass
class SizeException:
    kind: str  # "file" or "function"
    path: str
    name: str | None
    max_lines: int
    where: str  # file:line of the entry
    used: bool = False

    @property
    def label(self) -> str:
        return f"{self.path}:{self.name}" if self.kind == "function" else self.path


def read_exceptions(
    path: str, display: str
) -> tuple[dict[tuple[str, str, str | None], SizeException], list[str]]:
    """Parse an exceptions file; blank lines and lines starting with '#' are ignored
    (a '#' later in a line is part of the reason)."""
    entries: dict[tuple[str, str, str | None], SizeException] = {}
    errors: list[str] = []
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            where = f"{display}:{number}"
            parts = line.split(None, 3)
            if len(parts) < 4 or parts[0] not in ("file", "function") or not parts[2].isdigit():
                errors.append(
                    f"{where}: malformed exception (want 'function <path>:<name> <max-lines> "
                    f"<reason>' or 'file <path> <max-lines> <reason>'): {line}"
                )
                continue
            kind, target, max_lines = parts[0], parts[1], int(parts[2])
            if kind == "function":
                if ":" not in target:
                    errors.append(f"{where}: a function exception needs <path>:<name>: {target}")
                    continue
                file_path, name = target.split(":", 1)
            else:
                file_path, name = target, None
            key = (kind, file_path, name)
            if key in entries:
                first = entries[key].where
                errors.append(f"{where}: duplicate exception for {target} (first at {first})")
                continue
            entries[key] = SizeException(kind, file_path, name, max_lines, where)
    return entries, errors


# --------------------------------------------------------------------------------------
# The check.
# --------------------------------------------------------------------------------------


def source_files(root: str) -> list[str]:
    found = []
    for top in SOURCE_DIRS:
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for fn in sorted(filenames):
                if fn.endswith(EXTENSIONS):
                    rel = os.path.relpath(os.path.join(dirpath, fn), root)
                    found.append(rel.replace(os.sep, "/"))
    return found


def run(args: argparse.Namespace) -> int:
    root = args.root
    if not any(os.path.isdir(os.path.join(root, d)) for d in SOURCE_DIRS):
        print(f"check_sizes: no {' or '.join(SOURCE_DIRS)} directory under {root}", file=sys.stderr)
        return 2

    exceptions: dict[tuple[str, str, str | None], SizeException] = {}
    problems: list[str] = []
    exceptions_path = args.exceptions
    if exceptions_path is None:
        candidate = os.path.join(root, DEFAULT_EXCEPTIONS)
        exceptions_path = candidate if os.path.exists(candidate) else None
    if exceptions_path is not None:
        try:
            display = os.path.relpath(exceptions_path, root).replace(os.sep, "/")
            if display.startswith("../"):
                display = exceptions_path
            exceptions, errors = read_exceptions(exceptions_path, display)
        except OSError as e:
            print(f"check_sizes: cannot read {exceptions_path}: {e}", file=sys.stderr)
            return 2
        problems += errors

    file_sizes: dict[str, int] = {}
    functions: list[tuple[str, Function]] = []
    for rel in source_files(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        file_sizes[rel] = count_lines(text)
        warnings: list[str] = []
        for fn in find_functions(text, warnings):
            functions.append((rel, fn))
        for w in warnings:
            print(f"check_sizes: warning: {rel}: {w}", file=sys.stderr)

    if args.list:
        for rel, fn in functions:
            print(f"{rel}:{fn.start}-{fn.end} {fn.name}: {fn.length}")
    if args.report:
        ranked = sorted(functions, key=lambda rf: (-rf[1].length, rf[0], rf[1].start))
        print(f"The {min(REPORT_FUNCTIONS, len(ranked))} longest functions:")
        for rel, fn in ranked[:REPORT_FUNCTIONS]:
            print(f"  {fn.length:5d}  {rel}:{fn.start}-{fn.end} {fn.name}")
        big = sorted(
            ((n, rel) for rel, n in file_sizes.items() if n > REPORT_FILE_LINES), reverse=True
        )
        print(f"Files over {REPORT_FILE_LINES} lines:")
        for n, rel in big:
            print(f"  {n:5d}  {rel}")
        print(f"({len(file_sizes)} files, {len(functions)} functions)")
        print()

    for rel, n in file_sizes.items():
        exc = exceptions.get(("file", rel, None))
        limit = args.max_file_lines
        if exc is not None:
            if n > args.max_file_lines:
                exc.used = True
            limit = max(limit, exc.max_lines)
        if n > limit:
            print_limit = f"limit {limit}" + (f", excepted at {exc.where}" if exc else "")
            problems.append(f"{rel}: {n} lines ({print_limit})")

    for rel, fn in functions:
        exc = exceptions.get(("function", rel, fn.name))
        limit = args.max_function_lines
        if exc is not None:
            if fn.length > args.max_function_lines:
                exc.used = True
            limit = max(limit, exc.max_lines)
        if fn.length > limit:
            print_limit = f"limit {limit}" + (f", excepted at {exc.where}" if exc else "")
            problems.append(f"{rel}:{fn.start} {fn.name}: {fn.length} lines ({print_limit})")

    for exc in exceptions.values():
        if exc.used:
            continue
        if exc.kind == "file":
            n = file_sizes.get(exc.path)
            state = (
                "no such file"
                if n is None
                else f"{n} lines, within the limit {args.max_file_lines}"
            )
        else:
            lengths = [
                fn.length for rel, fn in functions if rel == exc.path and fn.name == exc.name
            ]
            state = (
                "no such function"
                if not lengths
                else f"{max(lengths)} lines, within the limit {args.max_function_lines}"
            )
        problems.append(
            f"{exc.where}: stale exception for {exc.kind} {exc.label} ({state}); remove it"
        )

    for p in problems:
        print(p)
    if problems:
        print(
            f"check_sizes: {len(problems)} problem(s); split the code, or list a justified "
            f"exception in {DEFAULT_EXCEPTIONS}",
            file=sys.stderr,
        )
        return 1
    return 0


# --------------------------------------------------------------------------------------
# Self-test.
# --------------------------------------------------------------------------------------

_SELF_TEST_CASES: list[tuple[str, str, list[tuple[str, int, int]]]] = [
    (
        "class with inline methods, brace initialisers and access specifiers",
        """\
class Foo final : public Bar<decltype(f())> {
 public:
  explicit Foo(int a) : a_(a), b_{a + 1} {
    c_ = {1, 2};
  }
  ~Foo() override {}
  int get() const noexcept { return a_; }
  auto operator()(int x) const -> int {
    return x;
  }
  bool operator==(const Foo& o) const { return a_ == o.a_; }
  struct Inner {
    void g() {}
  };

 private:
  int a_{0};
  int b_ = 1;
  std::vector<int> c_{1, 2, 3};
  std::function<void()> cb_{};
  struct stat st_ {};
};
""",
        [
            ("Foo::Foo", 3, 5),
            ("Foo::~Foo", 6, 6),
            ("Foo::get", 7, 7),
            ("Foo::operator()", 8, 10),
            ("Foo::operator==", 11, 11),
            ("Foo::Inner::g", 13, 13),
        ],
    ),
    (
        "out-of-line members, struct X::Impl, initialiser list, lambda inside a function",
        """\
namespace rwd::engine {
struct Recording::Impl {
  int n = 0;
  void thin(int k) {
    auto f = [&](int j) {
      if (j > k) {
        return j;
      }
      return k;
    };
    f(1);
  }
};

Recording::Recording(Config c)
    : impl_(std::make_unique<Impl>()),
      count_{c.count} {
  run();
}

Recording::~Recording() = default;

int Recording::Impl::size() const {
  return n;
}
}  // namespace rwd::engine
""",
        [
            ("Recording::Impl::thin", 4, 12),
            ("Recording::Recording", 17, 19),
            ("Recording::Impl::size", 23, 25),
        ],
    ),
    (
        "braces in strings, comments, char and raw literals; digit separators",
        """\
// a comment with { braces
/* and a block comment
   with } more { braces */
const char* f() {
  const char* s = "{ \\" {";
  char c = '{';
  char d = '\\'';
  int big = 1'000'000;
  auto r = R"(a } raw { string)";
  auto q = R"x(it has )" inside {)x";
  return s;  // }
}
int g() { return '}'; }
""",
        [("f", 4, 12), ("g", 13, 13)],
    ),
    (
        "namespace-scope brace initialisers, nested namespaces, a template function",
        """\
namespace a {
namespace b::c {
namespace {
const std::vector<int> kValues = {1, 2, 3};
std::map<std::string, int> kMap{{"x", 1}, {"y", 2}};
Foo kFoo{make(1), 2};
int kTable[] = {
    1,
    2,
};
enum class Kind : int { A, B };
}  // namespace

template <class T, class = std::enable_if_t<(sizeof(T) > 1)>>
T twice(const T& v) {
  T out{};
  out = v + v;
  return out;
}
}  // namespace b::c
}  // namespace a
""",
        [("twice", 15, 19)],
    ),
    (
        'extern "C" block, PETSc macros, a lambda variable, preprocessor lines',
        """\
#define BODY { {
extern "C" {
PetscErrorCode TSCreate_X(TS ts) {
  PetscFunctionBegin;
  PetscCallCXX({
    make();
  });
  PetscFunctionReturn(0);
}
}  // extern "C"
static const auto kCompare = [](int a, int b) {
  return a < b;
};
#if defined(X)
void h() noexcept {
  fast();
}
#else
void h() noexcept {}
#endif
""",
        [("TSCreate_X", 3, 9), ("kCompare", 11, 13), ("h", 15, 17), ("h", 19, 19)],
    ),
    (
        "export macro, conversion operator, requires clause, trailing return, try block",
        """\
class REWIND_EXPORT Widget final : public Base {
 public:
  Widget() = default;
  explicit operator bool() const { return true; }
  template <class T>
    requires std::integral<T>
  T add(T a) const noexcept(noexcept(a + a)) {
    return a + a;
  }
  auto trailing(int x) -> std::pair<int, int> {
    return {x, x};
  }
};
void tried() try {
  f();
} catch (...) {
  g();
}
""",
        [
            ("Widget::operatorbool", 4, 4),
            ("Widget::add", 7, 9),
            ("Widget::trailing", 10, 12),
            ("tried", 14, 18),
        ],
    ),
]


def self_test() -> int:
    failures = []
    for title, source, expected in _SELF_TEST_CASES:
        warnings: list[str] = []
        got = [(f.name, f.start, f.end) for f in find_functions(source, warnings)]
        want = list(expected)
        if got != want or warnings:
            failures.append(f"{title}:\n    want {want}\n    got  {got}\n    warnings {warnings}")
    # The lengths, and the line count of a file with and without a final newline.
    fn = Function("f", 4, 12)
    if fn.length != 9:
        failures.append(f"Function.length: want 9, got {fn.length}")
    if count_lines("a\nb\n") != 2 or count_lines("a\nb") != 2 or count_lines("") != 0:
        failures.append("count_lines")
    for f in failures:
        print(f"self-test FAILED: {f}")
    if failures:
        return 1
    print(f"self-test passed ({len(_SELF_TEST_CASES)} snippets)")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", help="repository root (holding src/ and apps/)")
    p.add_argument(
        "--exceptions",
        help=f"exceptions file (default: <root>/{DEFAULT_EXCEPTIONS} if present)",
    )
    p.add_argument("--max-file-lines", type=int, default=600)
    p.add_argument("--max-function-lines", type=int, default=100)
    p.add_argument(
        "--report",
        action="store_true",
        help=f"print the {REPORT_FUNCTIONS} longest functions and the files over "
        f"{REPORT_FILE_LINES} lines, then check",
    )
    p.add_argument("--list", action="store_true", help="print every function found, then check")
    p.add_argument("--self-test", action="store_true", help="test the parser on built-in snippets")
    args = p.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.root:
        p.error("--root is required")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
