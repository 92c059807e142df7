#!/usr/bin/env python3
"""check_facts.py SRCDIR - the README, docs/testing.md and the man pages give only
figures of the run the README names and counts the tree holds (run by
tests/package/check_readme.sh; reads sources only, so it works in distcheck's tree).

The run of record: README.md names the run its figures come from once, in a line
of its own that begins "Figures: bench/RESULTS.md, run LABEL" (in its "Measured
results" section), for example
    Figures: bench/RESULTS.md, run AO (2026-12-03, driver 580.159.04, ...
That run's section of bench/RESULTS.md is its "## Run LABEL" heading up to the
next "## " heading.  The check fails when the README names no run, names one
more than once, or names a run that has no such section; a date (2026-12-03),
driver version (580.159.04) or commit (`f7cb955`) given in the line's brackets
must appear in that section as well.  A newer run appended to bench/RESULTS.md
changes nothing here: the README moves to it by changing that one line (and the
figures that then differ).

Figures (README.md and man/*.in): every speed-up (a number or range followed by ×
or x: 9.33×, 1.69–1.73×), time (µs, us, ns, ms), percentage and instruction count,
and every bare decimal (an A/A spread, 0.98–1.02) must be a figure of the named
run's section: each number of the figure must appear there as written (a figure
an earlier run measured is quoted from the named run's "carried" paragraph).  A
time that is a setting, not a measurement, is allowed when it equals an option's
default (src/options.def: CUBATCH_FLUSH_US's 20 µs) or a #define NAME_NS/_US/_MS
constant of src/ (the 200 µs of CB_BUSY_TRUST_NS).  Numbers inside `code` and
fenced blocks are not figures (versions, paths, commands).

Counts (README.md, docs/testing.md, man/*.in): each phrase of COUNTS below is
compared with what its source of truth holds (src/hooks.def, src/hooks.skip,
src/options.def, src/stats.def, the TESTS of the makefiles, tools/mutants.py...)."""
import pathlib, re, sys

top = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
fail = []


def read(p):
    return (top / p).read_text()


# ---- the run the README names ----------------------------------------------------------------
results = read("bench/RESULTS.md")
readme = read("README.md")
heads = {m.group(1): m.start() for m in re.finditer(r"(?m)^## Run ([A-Z]+)\b", results)}
named = list(re.finditer(r"(?m)^Figures: bench/RESULTS\.md, run ([A-Z]+)\b(?:\s*\(([^)]*)\))?", readme))
if not named:
    sys.exit("check_facts: README.md names no run: it needs one line beginning "
             "'Figures: bench/RESULTS.md, run LABEL' (its \"Measured results\" section)")
if len(named) > 1:
    sys.exit("check_facts: README.md names its run more than once ("
             + ", ".join(f"run {m.group(1)}" for m in named) + "): name it once")
run = named[0].group(1)
if run not in heads:
    sys.exit(f"check_facts: README.md names run {run}, but bench/RESULTS.md has no '## Run {run}' heading "
             f"(its runs: {', '.join(sorted(heads, key=lambda h: (len(h), h))) or 'none'})")
start = heads[run]
nxt = re.compile(r"(?m)^#{1,2} ").search(results, start + 3)
section = results[start:nxt.start() if nxt else len(results)]
# What the line says of the run (date, driver, commit) must be that run's.
for m in re.finditer(r"\b(\d{4}-\d{2}-\d{2})\b|\b(\d{3}\.\d+\.\d+)\b|`([0-9a-f]{7,40})`", named[0].group(2) or ""):
    fact = next(g for g in m.groups() if g)
    if fact not in section and not (m.group(2) and fact in results[:results.find("\n## ")]):
        line = readme.count("\n", 0, named[0].start()) + 1
        fail.append(f"README.md:{line}: names run {run} with {fact!r}, which its section of bench/RESULTS.md does not give")


def measured(num):
    return re.search(r"(?<![\d.,])" + re.escape(num) + r"(?![\d]|[.,]\d)", section) is not None


# ---- settings: option defaults and time constants of src/, in ns --------------------------
UNIT_NS = {"ns": 1, "us": 1000, "µs": 1000, "ms": 1000000}
settings = set()
for m in re.finditer(r"CB_OPTION\((\w+),\s*\w+,\s*(\d+)", read("src/options.def")):
    unit = re.search(r"_(us|ns|ms)$", m.group(1))
    if unit:
        settings.add(int(m.group(2)) * UNIT_NS[unit.group(1)])
for f in sorted((top / "src").glob("*.[ch]")):
    for m in re.finditer(r"(?m)^#define \w+_(NS|US|MS)\s+\(?(\d+)u?", f.read_text()):
        settings.add(int(m.group(2)) * UNIT_NS[m.group(1).lower()])


def prose(text, roff=False):
    """The text without code: fenced blocks, `spans`, roff requests' escapes normalised."""
    if roff:
        text = (text.replace("\\(mu", "×").replace("\\[mu]", "×").replace("\\(*m", "µ")
                .replace("\\(en", "–").replace("\\-", "-"))
        text = "\n".join(l for l in text.splitlines() if not l.startswith(".TH"))
    text = re.sub(r"(?ms)^```.*?^```", "", text)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", text)


NUM = r"\d+(?:,\d{3})*(?:\.\d+)?"
RANGE = rf"(?<![\w.,/-])({NUM})(?:\s?[–-]\s?({NUM}))?"
FIGURES = [
    ("speed-up", re.compile(RANGE + r"\s?(?:×|x)(?![\w])")),
    ("time", re.compile(RANGE + r"\s?(µs|us|ns|ms)\b")),
    ("percentage", re.compile(RANGE + r"\s?%")),
    ("instruction count", re.compile(RANGE + r" instructions")),
    ("decimal", re.compile(r"(?<![\w.,/-])(\d+\.\d+)(?:\s?[–-]\s?(\d+\.\d+))?(?![\d.]*\w)(?!\.\d)")),
]


def check_figures(name, text):
    seen = set()
    for kind, rx in FIGURES:
        for m in rx.finditer(text):
            if m.start() in seen:
                continue
            seen.add(m.start())
            nums = [n for n in m.groups()[:2] if n]
            if kind == "time":
                try:
                    ns = [float(n.replace(",", "")) * UNIT_NS[m.group(3)] for n in nums]
                except ValueError:
                    ns = []
                if ns and all(v in settings for v in ns):
                    continue
            missing = [n for n in nums if not measured(n)]
            if missing:
                line = text.count("\n", 0, m.start()) + 1
                fail.append(f"{name}:{line}: {kind} {m.group(0).strip()!r}: "
                            f"{', '.join(missing)} is not a figure of run {run} (the run README.md names) of bench/RESULTS.md")


# ---- counts and their sources of truth ------------------------------------------------------
def rows(path, macro):
    return len(re.findall(rf"(?m)^{macro}\(", read(path)))


def skip_lines():
    return len([l for l in read("src/hooks.skip").splitlines() if l.strip() and not l.lstrip().startswith("#")])


def tests_count():
    names = []
    files = [top / "Makefile.am"] + sorted(top.glob("*/local.mk")) + sorted(top.glob("*/*/local.mk"))
    for f in files:
        text = f.read_text().replace("\\\n", " ")
        for m in re.finditer(r"(?m)^TESTS\s*\+?=(.*)$", text):
            names += m.group(1).split()
    return len(names)


def mutants_count():
    text = read("tools/mutants.py")
    body = text[text.index("MUTANTS = {"):text.index("\n}\n", text.index("MUTANTS = {"))]
    return len(re.findall(r'(?m)^    "[\w-]+":', body))


def define(path, name):
    return int(re.search(rf"#define {name}\s+(\d+)", read(path)).group(1))


def chunks():
    m = re.search(r"has_h2d \? (\d+) : (\d+)", read("src/engine.c"))
    return (int(m.group(1)), int(m.group(2)))


WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve "
                                     "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
COUNTS = [  # (phrase with the count(s) as groups, what it counts, how)
    (r"\b(\d+) driver functions", "rows of src/hooks.def", lambda: rows("src/hooks.def", "CB_HOOK(?:_SINCE)?")),
    (r"\bleaves (\d+) ", "functions of src/hooks.skip", skip_lines),
    (r"\((\d+) today", "functions of src/hooks.skip", skip_lines),
    (r"(?<![|\\\d])(\d+) options\b", "rows of src/options.def", lambda: rows("src/options.def", "CB_OPTION")),
    (r"\b(\d+) counters\b", "rows of src/stats.def and src/directions.def (a copies_ counter each)",
     lambda: rows("src/stats.def", "CB_STAT") + rows("src/stats.def", "CB_FLUSH") + rows("src/directions.def", "CB_DIRECTION")),
    (r"\b(\d+) tests\b", "TESTS of Makefile.am and the local.mk files", tests_count),
    (r"\b(\d+) mutants\b", "entries of tools/mutants.py's MUTANTS", mutants_count),
    (r"up to (\d+) copies", "CB_KPARAMS_MAX (src/copy_kernel.h)", lambda: define("src/copy_kernel.h", "CB_KPARAMS_MAX")),
    (r"\((\d+) ranges\)", "CB_CLASS_CACHE (src/classify.c)", lambda: define("src/classify.c", "CB_CLASS_CACHE")),
    (r"more than (\d+) bands", "CB_POLICY_BANDS (src/policy.c)", lambda: define("src/policy.c", "CB_POLICY_BANDS")),
    (r"chunks of (\d+) copies \((\d+) without", "the chunk sizes of cb_engine_chunk (src/engine.c)", chunks),
    (r"\b(\w+) so far", "files of tests/fuzz/regressions", lambda: len(list((top / "tests/fuzz/regressions").glob("*.ops")))),
]


def check_counts(name, text):
    flat = re.sub(r"\s+", " ", text)
    for phrase, what, how in COUNTS:
        for m in re.finditer(phrase, flat):
            said = tuple(int(g) if g.isdigit() else WORDS.get(g.lower(), -1) for g in m.groups())
            truth = how()
            truth = truth if isinstance(truth, tuple) else (truth,)
            if said != truth:
                fail.append(f"{name}: {m.group(0)!r} says {'/'.join(map(str, said))}, "
                            f"but there are {'/'.join(map(str, truth))} ({what})")


check_figures("README.md", prose(readme))
check_counts("README.md", prose(readme))
check_counts("docs/testing.md", prose(read("docs/testing.md")))
for page in sorted((top / "man").glob("*.in")):
    text = prose(page.read_text(), roff=True)
    check_figures(f"man/{page.name}", text)
    check_counts(f"man/{page.name}", text)

for line in fail:
    print("check_facts: " + line)
if not fail:
    print(f"check_facts: ok: the figures of README.md and man/ are run {run}'s (the run README.md names), "
          "their counts the tree's")
sys.exit(1 if fail else 0)
