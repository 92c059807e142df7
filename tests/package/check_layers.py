#!/usr/bin/env python3
"""check_layers.py - the files of src/ call only downward.

src/internal.h's header comment lists every source file of the library in the
order of the layers, groups of files joined by arrows:

    interception   hooks.c resolve.c api.c  ->  init.c  ->  net.c
    ...

Each group of files between arrows is one level, counted from the top of the
first line to the end of the last.  A file (with its own header: run.c and
run.h are one) may call a function, read a variable or include the header of a
file only at its own level or below, and the files of one level may not call
each other in a circle.  internal.h itself, included by every file, may name
only the files of the last line (the base): an inline function there that
called a file above would tie every file that includes it to that file.

Reads the sources only (no build): a function or variable is "of" the file
that defines it at file scope without `static`, an inline of a header is its
file's.  Fails on a file of src/*.c missing from the list, on a call, read or
include that runs upward, and on a circle inside a level.

Usage: check_layers.py [TOPSRCDIR]"""
import pathlib
import re
import sys

top = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
src = top / "src"
fail = []


def strip(text):
    """The code without comments and string literals."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


# ---- the documented order ------------------------------------------------------------
head = (src / "internal.h").read_text().split("#ifndef", 1)[0]
level_of, levels, base = {}, [], []
# A group's line may go on under it, beginning with an arrow.
lines = re.sub(r"\n\s*\*\s+(?=->)", " ", head).splitlines()
for line in lines:
    m = re.match(r"\s*\*\s+[a-z]+\s{2,}(.*\.c.*)$", line)
    if not m:
        continue
    groups = [g.split() for g in m.group(1).split("->") if g.split()]
    for g in groups:
        levels.append(g)
        for f in g:
            level_of[f[:-2]] = len(levels) - 1
    base = [f[:-2] for g in groups for f in g]
if not levels:
    sys.exit("check_layers: no layer list in src/internal.h's header comment")

rooms = sorted(p.stem for p in src.glob("*.c"))
for r in rooms:
    if r not in level_of:
        fail.append(f"src/{r}.c is in no layer of src/internal.h's list: say where it stands")
for r in level_of:
    if r not in rooms:
        fail.append(f"src/internal.h's layer list names {r}.c, which src/ does not have")

# ---- what each file defines and uses ---------------------------------------------------
code, includes = {}, {}
for p in sorted(src.glob("*.[ch]")):
    text = p.read_text()
    code[p.name] = strip(text)
    includes[p.name] = re.findall(r'^\s*#\s*include\s+"([\w.]+)"', re.sub(r"/\*.*?\*/", " ", text, flags=re.S), re.M)


def room_of(name):
    stem = name.rsplit(".", 1)[0]
    return stem if stem in rooms else None


DEF = re.compile(r"^(?!static\b)(?!extern\b)(?!typedef\b)[A-Za-z_][\w \t\*]*?\b(cb_\w+)\s*(?:\(|\[|=|;)", re.M)
INLINE = re.compile(r"^static\s+inline\b[^;{]*?\b(cb_\w+)\s*\(", re.M)
owner = {}
for name, text in code.items():
    room = room_of(name)
    if not room:
        continue
    names = INLINE.findall(text) if name.endswith(".h") else DEF.findall(text)
    for n in names:
        owner.setdefault(n, room)

def bodies(text):
    """What a shared header runs in its includers: its inline functions'
    bodies and its macros (its declarations tie nobody to anybody)."""
    out = []
    for m in re.finditer(r"^static\s+inline\b[^;{]*\{", text, re.M):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out.append(text[m.end():i])
    out += re.findall(r"^\s*#\s*define\s+\w+(?:\([^)]*\))?((?:.*\\\n)*.*)$", text, re.M)
    return "\n".join(out)


USE = re.compile(r"\b(cb_\w+)\b")
edges = {}  # (from room, to room) -> an example
for name, text in code.items():
    frm = room_of(name) or ("internal" if name == "internal.h" else None)
    if not frm:
        continue
    for n in set(USE.findall(bodies(text) if frm == "internal" else text)):
        to = owner.get(n)
        if to and to != frm:
            edges.setdefault((frm, to), n)
    for inc in includes[name]:
        to = room_of(inc)
        if to and to != frm and inc.endswith(".h"):
            edges.setdefault((frm, to), f'#include "{inc}"')

for (frm, to), why in sorted(edges.items()):
    if frm == "internal":
        if to not in base:
            fail.append(f"src/internal.h names {why} of src/{to}.c, above the base: move it to {to}.h")
        continue
    if frm in level_of and to in level_of and level_of[to] < level_of[frm]:
        fail.append(f"src/{frm}.c -> src/{to}.c ({why}) runs upward: {to}.c stands above {frm}.c in src/internal.h's list")

# ---- no circle inside a level ------------------------------------------------------------
graph = {}
for (frm, to) in edges:
    if frm != "internal" and level_of.get(frm) == level_of.get(to):
        graph.setdefault(frm, set()).add(to)
state = {}


def visit(n, path):
    state[n] = 1
    for m in sorted(graph.get(n, ())):
        if state.get(m) == 1:
            cyc = path[path.index(m):] + [m]
            fail.append("a circle: " + " -> ".join(f"src/{c}.c" for c in cyc))
        elif not state.get(m):
            visit(m, path + [m])
    state[n] = 2


for n in sorted(graph):
    if not state.get(n):
        visit(n, [n])

for line in fail:
    print("check_layers: " + line)
if fail:
    sys.exit(1)
print(f"check_layers: ok: {len(rooms)} files in {len(levels)} levels, {len(edges)} ties, none upward")
