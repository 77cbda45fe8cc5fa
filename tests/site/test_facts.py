"""Every page's facts on the committed recordings (docs/facts, ``python -m tracesite facts``).

* every claim holds on every repeat (the runner raises otherwise);
* every key a page pastes (``{glue:...}`...``) is produced, by its facts module or by one of
  the page's own cells, and every key its facts module produces is pasted somewhere on the
  page (a median's ``_lo``/``_hi`` companions count with it) or read by one of its cells
  from the dict ``glue_facts`` returns;
* the facts equal ``tests/golden/facts/<page>.json``, so a re-record shows in review as a
  diff of the numbers the pages quote (``UPDATE_GOLDEN=1`` rewrites them);
* every worded claim (``tracesite.words``) fails on perturbed copies of its data, and a
  claim whose sentence says one of the words calls its function.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest
from tracesite import facts, words

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GOLDEN = ROOT / "tests" / "golden" / "facts"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"

#: ``{glue:text}`key:.1f` ``, ``{glue:md}`key` ``, ``{glue}`key` ``
INLINE = re.compile(r"\{glue(?::[a-z]+)?\}`([A-Za-z0-9_]+)")
#: ```` ```{glue:md} key ```` and ``:::{glue:figure} key``
BLOCK = re.compile(r"^(?:```|:::)\{glue(?::[a-z]+)?\}\s+([A-Za-z0-9_]+)", re.M)
#: A page cell's own ``glue("key", ...)``, or tracesite.notebook's ``md``/``num``/``put("key", ...)``
CELL_GLUE = re.compile(r"""\b(?:glue|md|num|put)\(\s*["']([A-Za-z0-9_]+)["']""")
#: The name a page gives the dict ``glue_facts`` returns (``facts = glue_facts("part4")``)
FACTS_DICT = re.compile(r"^(\w+) = glue_facts\(", re.M)


def page_of(name: str) -> Path:
    """``part1_notes`` -> ``docs/chapters/part1-notes.md``."""
    found = [
        p
        for p in DOCS.rglob("*.md")
        if "_build" not in p.parts and p.stem.replace("-", "_") == name
    ]
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


def used_keys(text: str) -> set[str]:
    return set(INLINE.findall(text)) | set(BLOCK.findall(text))


def read_keys(text: str) -> set[str]:
    """Keys a page's cells read from the dict ``glue_facts`` returns (``facts["key"]``), for
    a picture's caption or a command line: used, though not pasted."""
    return {
        key
        for name in FACTS_DICT.findall(text)
        for key in re.findall(rf"""\b{name}\[["']([A-Za-z0-9_]+)["']\]""", text)
    }


def family(key: str) -> str:
    """A median's key and its ``_lo``/``_hi`` companions share one family."""
    return re.sub(r"_(lo|hi)$", "", key)


def test_there_are_pages() -> None:
    assert "part5" in facts.pages()


#: The code that checks what pages say: facts and measures modules, picture modules, and
#: the pages' own cells. ``docs/_ext`` (the site's machinery) keeps ``assert`` for its own
#: invariants.
CLAIM_CODE = (
    "facts/*.py",
    "chapters/*.py",
    "*_measures.py",
    "*_pictures.py",
    "*.md",
    "chapters/*.md",
)


def code_cells(path: Path) -> str:
    """A page's ``{code-cell}`` blocks (a module: its whole text), other lines blanked so
    that line numbers stay the page's."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".md":
        return text
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("```{code-cell}") or (inside and line.startswith("```")):
            inside = not inside
            out.append("")
        else:
            out.append(line if inside and not line.startswith(("%", ":")) else "")
    return "\n".join(out)


def narrows_a_type(node: ast.Assert) -> bool:
    """``assert name is not None`` (or ``obj.attr``), with no message: for the type checker,
    after the claim that holds it (a claim cannot narrow a type)."""
    test = node.test
    return (
        node.msg is None
        and isinstance(test, ast.Compare)
        and isinstance(test.left, (ast.Name, ast.Attribute))
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def test_every_check_of_a_page_is_a_claim() -> None:
    """One convention: a check of what a page says is ``claim(ok, sentence)``, never a bare
    ``assert``, so that a survey (``--survey=h100``) lists every failing sentence instead of
    stopping at the first assert, and every check carries the words it guards."""
    found = []
    for pattern in CLAIM_CODE:
        for path in sorted(DOCS.glob(pattern)):
            tree = ast.parse(code_cells(path), filename=str(path))
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno}"
                for node in ast.walk(tree)
                if isinstance(node, ast.Assert) and not narrows_a_type(node)
            ]
    assert not found, f"{len(found)} bare asserts (make each a claim(ok, sentence)): {found[:8]}"


def story_of(name: str) -> Path:
    """``story_01a_table_and_timeline`` -> ``examples/01_matmul_add/01a_table_and_timeline.py``."""
    found = list((ROOT / "examples").glob(f"*/{name.removeprefix(STORY)}.py"))
    assert len(found) == 1, f"{name}: {found}"
    return found[0]


#: A story page's facts module: ``docs/facts/story_<script stem>.py``.
STORY = "story_"


def test_every_story_has_a_facts_module() -> None:
    """A story's sentences about its recordings are claims too, in a module of its own."""
    stories = {p.stem for p in (ROOT / "examples").glob("*/[0-9]*.py")}
    modules = {n.removeprefix(STORY) for n in facts.pages() if n.startswith(STORY)}
    assert stories == modules, (sorted(stories - modules), sorted(modules - stories))


@pytest.mark.parametrize("name", facts.pages())
def test_page_facts(name: str) -> None:
    """One test a page, so that one process computes its facts (they take up to 15 s a
    page) and its checks follow: the keys both ways, the golden file, the words. A story's
    module only claims (the story prints its numbers from the replay): it pastes nothing."""
    glue = facts.page_facts(name)
    if name.startswith(STORY):
        story_of(name)
        assert not glue, f"{name} pastes {sorted(glue)[:5]}: a story's facts only claim"
        every_worded_claim_fails_on_perturbed_data(name)
        every_claim_checks_its_words(name)
        return
    text = page_of(name).read_text(encoding="utf-8")
    every_pasted_key_is_produced(name, glue, text)
    every_produced_key_is_pasted(name, glue, text)
    facts_match_golden(name, glue)
    every_worded_claim_fails_on_perturbed_data(name)
    every_claim_checks_its_words(name)


def every_pasted_key_is_produced(name: str, glue: dict[str, list[object]], text: str) -> None:
    missing = used_keys(text) - set(glue) - set(CELL_GLUE.findall(text))
    assert not missing, f"{name}.md pastes keys nothing produces: {sorted(missing)}"


def every_produced_key_is_pasted(name: str, glue: dict[str, list[object]], text: str) -> None:
    used = {family(k) for k in used_keys(text) | read_keys(text)}
    # Another GPU's keys (``h100_...``) are the same facts on its recordings: the page
    # pastes those it compares, and need not paste the rest.
    others = tuple(f"{gpu}_" for gpu in getattr(facts._module(name), "GPUS", ("h200",))[1:])
    unused = sorted(
        k for k in glue if family(k) not in used and not k.startswith(others or ("\0",))
    )
    assert not unused, f"docs/facts/{name}.py produces keys its page never pastes: {unused}"


def facts_match_golden(name: str, glue: dict[str, list[object]]) -> None:
    path = GOLDEN / f"{name}.json"
    text = json.dumps(glue, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    if not path.exists():
        pytest.fail(f"no golden file {path.name}; run with UPDATE_GOLDEN=1 to create it")
    want = json.loads(path.read_text(encoding="utf-8"))
    changed = sorted(k for k in set(want) | set(glue) if want.get(k) != glue.get(k))
    assert not changed, (
        f"{name}: {len(changed)} facts differ from tests/golden/facts/{name}.json "
        f"(first: {changed[:5]}); after a re-record, review the diff and rerun with UPDATE_GOLDEN=1"
    )


def every_worded_claim_fails_on_perturbed_data(name: str) -> None:
    """Each word's check the page's facts made that held, on the recordings' own numbers, is
    fed the perturbed copies (a doubled or halved ratio, an added outlier, swapped sets) and
    must reject every one: a claim that survives them is looser than its words."""
    loose = []
    for word, args in facts.page_words(name):
        check = getattr(words, word)
        if not check(*args):  # a call that did not hold (in an any(), or negated) is not a claim
            continue
        loose += [(word, args, bad) for bad in words.perturbed(word, args) if check(*bad)]
    assert not loose, f"{name}: claims looser than their words: {loose[:5]}"


def every_claim_checks_its_words(name: str) -> None:
    """A claim whose sentence says one of the words (``words.SAYS``: "most", "a few µs",
    "far longer", ...) calls that word's function between the claim before it and itself,
    on some repeat. It cannot tell whether the call's result decides the claim (a reader of
    the check can); what it catches is a check written with its own threshold, or none."""
    loose = {
        sentence: sorted(words.unchecked(sentence, called))
        for sentence, called in facts.page_claims(name).items()
        if words.unchecked(sentence, called)
    }
    assert not loose, f"{name}: claims whose check skips a word they say: {loose}"


def test_a_page_asked_for_at_once_is_computed_once(tmp_path, monkeypatch) -> None:
    """Two callers at once (here threads; pytest-xdist's workers are processes): the first
    computes and writes the cache, the second waits for it and reads what it wrote."""
    import threading
    import time
    from types import SimpleNamespace

    monkeypatch.setattr(facts, "GENERATED", tmp_path)
    runs: list[str] = []

    def slow_run(page: str) -> SimpleNamespace:
        runs.append(page)
        time.sleep(0.5)
        return SimpleNamespace(read=list, glue={"n": ["num", 1.0]}, words=[], claims={})

    monkeypatch.setattr(facts, "run_page", slow_run)
    got: list[dict[str, list[object]]] = []
    callers = [
        threading.Thread(target=lambda: got.append(facts.page_facts("index"))) for _ in range(2)
    ]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert runs == ["index"] and got == [{"n": ["num", 1.0]}] * 2
    assert [p.name for p in tmp_path.glob("*.json")] == ["index.json"]  # no part file left


#: The longest a Python module under docs/ may be: past it, split it by idea (a page's
#: measures into what each section reads, a chapter's rows into their readings).
MODULE_LINES = 800


def test_no_module_under_docs_is_longer_than_800_lines() -> None:
    built = {"_build", "auto_examples", "gen_modules", "_generated"}
    long = {
        str(p.relative_to(ROOT)): n
        for p in DOCS.rglob("*.py")
        if not built & set(p.relative_to(DOCS).parts)
        and (n := len(p.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert not long, f"modules over {MODULE_LINES} lines: {long}"


def _words_table(text: str) -> dict[str, str]:
    """A markdown table's rows ``| word | meaning | ...`` as {word: meaning}."""
    rows = re.findall(r"^\s*\| ([^|]+?) \| ([^|]+?) \|", text, re.M)
    return {w: m for w, m in rows if w != "word" and not w.startswith("---")}


def test_words_have_one_meaning_everywhere() -> None:
    """The words pages use about numbers mean one thing: CONTRIBUTING.md's table (with the
    function that checks each) and the glossary's (for readers) say the same, every checking
    function of ``tracesite.words`` is listed, and the thresholds they state are the code's."""
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    glossary = (DOCS / "glossary.md").read_text(encoding="utf-8")
    ours = _words_table(contributing[contributing.index("| word | meaning | function |") :])
    readers = _words_table(glossary[glossary.index("## Words about numbers") :])
    assert ours == readers
    listed = set(re.findall(r"\| `(\w+)\(", contributing))
    helpers = {"perturbed", "recording", "said", "stop", "unchecked"}
    checks = {n for n in words.__all__ if n.islower()} - helpers
    assert listed == checks, (sorted(listed - checks), sorted(checks - listed))

    def pct(x: float) -> str:
        return f"{100 * x:g} %"

    assert words.MOST == 0.5 and 1 / words.MUCH == 0.5  # "over half", "at most half"
    stated = {
        "about": f"within {pct(words.ABOUT)} of the number it qualifies",
        "barely changed": f"within {pct(words.ABOUT)} of before",
        "no outlier": f"every repeat within {pct(words.ABOUT)} of the median",
        "far (longer, slower, more)": f"at least {words.FAR:g} times",
        "much, well (over, under)": f"at least {words.MUCH:g} times (well under: at most half)",
        "a little, slightly": f"above the reference by at most {pct(words.ABOUT)} (slightly shorter: below it)",
        "nearly all, almost all, almost every": f"at least {pct(words.NEARLY_ALL)} (almost never: at most {pct(1 - words.NEARLY_ALL)})",
        "a small share, fraction or part": f"under {pct(words.SMALL_SHARE)}",
        "a few per cent": f"under {pct(words.FEW_PCT)}",
        "tiny": f"under {pct(words.TINY)} of what the sentence compares it with",
        "a few µs": f"at most {words.FEW_US:g} µs",
        "a few bytes": f"1 to {words.FEW_BYTES} bytes",
        "a few (things counted)": f"2 to {words.FEW}",
        "dozens": f"{words.DOZENS.start} to {words.DOZENS.stop - 1}",
        "hundreds": f"{words.HUNDREDS.start} to {words.HUNDREDS.stop - 1}",
    }
    wrong = {w: (ours.get(w), m) for w, m in stated.items() if ours.get(w) != m}
    assert not wrong, f"the tables' meanings differ from tracesite.words: {wrong}"


def test_every_word_rejects_its_perturbations() -> None:
    """Each word's perturbations fail the word on a value that passes it: so a claim that
    calls the word is tested by the page test above."""
    passing = {
        "about": (1.0, 1.0), "barely_changed": (1.0, 1.05), "no_outlier": ((1.0, 1.0, 1.05),),
        "beyond_spread": ((3.0, 4.0), (1.0, 2.0)), "times": (3.5, 1.0, 3.0),
        "far": (4.0, 1.0), "much": (2.5, 1.0), "a_little": (1.05, 1.0), "most": (0.6, 1.0),
        "nearly_all": (0.95, 1.0), "small_share": (0.2, 1.0), "few_pct": (0.05, 1.0),
        "tiny": (0.005, 1.0), "few_us": (3.0,), "few_bytes": (8,), "few": (5,),
        "dozens": (40,), "hundreds": (500,),
    }  # fmt: skip
    words.stop()
    for word, args in passing.items():
        check = getattr(words, word)
        assert check(*args), word
        assert not any(check(*bad) for bad in words.perturbed(word, args)), word
