#!/usr/bin/env python3
"""Fails when files under src/ import each other in a circle, against the layers lib.rs lists,
or from one job kind's module into another's.

Layers: lib.rs's doc lists the top-level modules in numbered layers, from the top; a module may
import only from layers below its own. Job kinds: each folder under src/integrations/ (but the
registry) is one kind's adapter, a leaf that imports no other kind's.

Reads every `crate::`, `super::` and `self::` path in src/**/*.rs (not main.rs, the binary), in
`use` items and in code, and resolves it to the file of the longest module prefix that has one.
Test code is left out, since tests may reach anywhere: files named tests.rs or *_tests.rs, files
under a tests/ dir, and items under a bare `#[cfg(test)]`. A re-export counts as its module file.
Prints each strongly connected component of more than one file (Tarjan), with the paths that tie it.
"""
import bisect
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

# Comments and literals go first, so that a brace or a path inside them is not read as code.
NOISE = re.compile(
    r'//[^\n]*|/\*.*?\*/|r(#*)".*?"\1|b?"(?:\\.|[^"\\])*"|b?\'(?:\\.|[^\\\'])\'', re.S
)
USE = re.compile(r"\buse\s+([^;]+);")
PATH = re.compile(r"(?<![\w$])(?:crate|super|self)(?:\s*::\s*\w+)+")
INLINE_MOD = re.compile(r"\bmod\s+(\w+)\s*\{|[{}]")
CFG_TEST = "#[cfg(test)]"
NESTING = {"{": 1, "(": 1, "[": 1, "}": -1, ")": -1, "]": -1}


def is_test_file(path):
    return path.name == "tests.rs" or path.name.endswith("_tests.rs") or "tests" in path.relative_to(SRC).parts


def module_of(path):
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts.pop()
    return tuple(parts)


def without_test_items(text):
    """Blanks every item that follows `#[cfg(test)]`: up to its `;`, or its whole `{ ... }`."""
    while (start := text.find(CFG_TEST)) >= 0:
        depth = 0
        for end in range(start + len(CFG_TEST), len(text)):
            depth += NESTING.get(text[end], 0)
            if depth == 0 and text[end] in ";}":
                break
        text = text[:start] + " " * (end + 1 - start) + text[end + 1 :]
    return text


def inline_modules(text):
    """Where each inline `mod name { ... }` begins and ends, as (offset, module suffix) steps."""
    steps, stack, suffix = [(0, ())], [], ()
    for match in INLINE_MOD.finditer(text):
        if match.group(1):
            suffix += (match.group(1),)
            stack.append(True)
            steps.append((match.end(), suffix))
        elif match.group() == "{":
            stack.append(False)
        elif stack and stack.pop():
            suffix = suffix[:-1]
            steps.append((match.end(), suffix))
    return steps


def expand(tree):
    """`a::{b, c::{d, self}}` -> ["a::b", "a::c::d", "a::c"]; aliases and globs dropped."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree)).replace("::*", "")
    if "{" not in tree:
        return [tree]
    head, body = tree.split("{", 1)
    body, items, depth, item = body[: body.rindex("}")], [], 0, ""
    for char in body + ",":
        depth += NESTING.get(char, 0)
        if char == "," and depth == 0:
            items.append(item)
            item = ""
        else:
            item += char
    head = head.rstrip(":")
    return [
        (head if sub == "self" else f"{head}::{sub}") if head else sub
        for item in items if item
        for sub in expand(item)
    ]


def resolve(path, module, files):
    segments = path.split("::")
    base = list(module)
    while segments and segments[0] in ("crate", "super", "self"):
        head = segments.pop(0)
        base = [] if head == "crate" else base[:-1] if head == "super" else base
    full = tuple(base + segments)
    for length in range(len(full), -1, -1):
        if full[:length] in files:
            return files[full[:length]]
    return None


def imports(path, files):
    text = NOISE.sub(lambda m: '""' if m.group().endswith(('"', "'")) else " ", path.read_text())
    text = without_test_items(text)
    steps = inline_modules(text)
    offsets = [offset for offset, _ in steps]
    found = [(m.start(), p) for m in USE.finditer(text) for p in expand(m.group(1))]
    code = USE.sub(lambda m: " " * len(m.group()), text)
    found += [(m.start(), re.sub(r"\s+", "", m.group())) for m in PATH.finditer(code)]
    for offset, used in found:
        if used.split("::")[0] not in ("crate", "super", "self"):
            continue
        module = module_of(path) + steps[bisect.bisect_right(offsets, offset) - 1][1]
        target = resolve(used, module, files)
        if target and target != path:
            yield target, used


LAYER_LINE = re.compile(r"^//! (\d+)\. ([^:]*)")
TEST_ONLY_MODULE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub\s+)?mod\s+(\w+)\s*;")
INTEGRATIONS = SRC / "integrations"
NOT_A_KIND = {"registry"}


def layers():
    """Top-level module -> its layer number, from lib.rs's doc."""
    found = {}
    for line in (SRC / "lib.rs").read_text().splitlines():
        if match := LAYER_LINE.match(line):
            for name in re.findall(r"`(\w+)`", match.group(2)):
                found[name] = int(match.group(1))
    return found


def test_only_modules():
    return set(TEST_ONLY_MODULE.findall((SRC / "lib.rs").read_text()))


def kind_of(path):
    """The job kind whose adapter `path` belongs to, if any."""
    parts = path.relative_to(SRC).parts
    if len(parts) > 2 and parts[0] == "integrations" and parts[1] not in NOT_A_KIND:
        return parts[1]
    return None


def against_the_layers(graph):
    """Edges from a module to one in its own layer or above, and between kinds' adapters."""
    order, tests, found = layers(), test_only_modules(), []
    for path, targets in sorted(graph.items()):
        top = module_of(path)[:1]
        if not top or top[0] in tests:
            continue
        if top[0] not in order:
            found.append(f"{path.relative_to(SRC)}: module {top[0]} is in no layer of lib.rs's list")
            continue
        for target, used in sorted(targets.items()):
            other = module_of(target)[:1]
            if not other or other == top or other[0] in tests:
                continue
            if order.get(other[0], 0) <= order[top[0]]:
                found.append(
                    f"{path.relative_to(SRC)} imports {used}: {top[0]} (layer {order[top[0]]}) may not use "
                    f"{other[0]} (layer {order.get(other[0], '?')})"
                )
        kind = kind_of(path)
        for target, used in sorted(targets.items()):
            if kind and kind_of(target) not in (None, kind):
                found.append(f"{path.relative_to(SRC)} imports {used}: the {kind} adapter may not use another kind's")
    return found


def circles(graph):
    """Tarjan's strongly connected components of more than one node."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main():
    sources = [p for p in sorted(SRC.rglob("*.rs")) if not is_test_file(p) and p.name != "main.rs"]
    files = {module_of(p): p for p in sources}
    graph = {p: {} for p in sources}
    for path in sources:
        for target, used in imports(path, files):
            graph[path].setdefault(target, used)
    found = circles(graph)
    for component in found:
        print(f"import circle of {len(component)} files:")
        for path in component:
            ties = [f"{t.relative_to(SRC)} ({u})" for t, u in sorted(graph[path].items()) if t in component]
            print(f"  {path.relative_to(SRC)} -> {', '.join(ties)}")
    wrong = against_the_layers(graph)
    for line in wrong:
        print(f"against the layers: {line}")
    if found or wrong:
        sys.exit(1)
    print(f"no import circles and none against the layers among {len(sources)} files under src/")


if __name__ == "__main__":
    main()
