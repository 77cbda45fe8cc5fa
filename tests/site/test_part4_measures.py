"""Part 4's facts modules (docs/facts: the shared _decode, _chapter and _sessions, and the
pages' part4, part4_notes and part4_kernels) against every recorded repeat."""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

import pytest
from tracesite import load_definitions
from tracesite.recordings import load

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "facts"))
import _chapter  # noqa: E402
import _decode as m  # noqa: E402
import _sessions  # noqa: E402
import part4  # noqa: E402
import part4_kernels  # noqa: E402
import part4_notes  # noqa: E402


class Chapter(part4_kernels.Chapter, part4_notes.Chapter):
    """Every page's Chapter in one: the numbers they share are computed once."""


EXAMPLE = "05_llm_decode"
SOURCE = ROOT / "examples" / EXAMPLE / "_05_common.py"  # the shapes every story of 05 shares
N = len(load(EXAMPLE, m.FINAL).repeats)


@cache
def recs(name: str):
    return load(EXAMPLE, name).repeats


@cache
def sessions(name: str):
    return load(EXAMPLE, name).sessions


@cache
def chapter() -> Chapter:
    return Chapter(recs, load_definitions(SOURCE)["SHAPES"], sessions)


def has_check() -> bool:
    try:
        recs(m.CHECK)
    except RuntimeError:
        return False
    return True


@pytest.fixture(params=range(N), ids=lambda k: f"r{k}")
def k(request):
    return request.param


def test_three_repeats():
    assert N >= 3


def test_generate_per_repeat(k):
    f = m.generate_facts(
        recs("generate_dynamic_1b")[k], recs("generate_static_1b")[k], chapter().shapes["1b"]
    )
    assert f["dyn_dtoh"] == 2 and f["dyn_busy_pct"] < 30
    assert "8" in f["dec_tiles"]


def test_packed_per_repeat(k):
    f = part4_notes.packed_facts(recs("loop_short_8b")[k], recs("loop_packed_8b")[k])
    assert f["att_us_after"] < f["att_us_before"]


def test_path_and_bound():
    f = chapter().path_facts()
    assert f["lu8_tps"] > f["lf8_tps"] > f["lc8_tps"] > f["gsc8_tps"]
    assert f["path_table"].count("\n") == len(_chapter.PATH) + 1
    b = chapter().bound_facts()
    assert b["floor_spec_ms"] * b["max_tps"] == pytest.approx(1e3)


def test_classes_add_up():
    t = chapter().table("loop_fused_8b")
    for x in t.runs:
        assert sum(x.n.values()) == sum(
            len(m.token_ops(r.trace())) for r in recs("loop_fused_8b")[:1]
        )
        assert x.rest > 0


def test_kernel_pages_facts():
    c = chapter()
    facts = {
        **c.fused_facts(),
        **c.attempt_facts(),
        **c.gemv_kernel_facts(),
        **c.attention_facts(),
        **c.session_facts(),
        **c.final_facts(),
        **c.small_model_facts(),
    }
    assert facts["final_frac_lo"] >= 100 * m.GOAL
    assert facts["f_small_us"] > facts["f_gemv_over_us"] > facts["f_rest_us"] > 0
    assert facts["s1_frac"] < facts["s8_frac"]


def test_picture_windows():
    tr = recs("generate_dynamic_1b")[0].trace()
    (a, b), gemm, launch = part4.decode_zoom(tr)
    assert a < tr.ts_ns[gemm] < b and tr.ts_ns[launch] < tr.ts_ns[gemm]
    assert len(m.syncs(tr)) == 2
    final = recs(m.FINAL)[0].trace()
    window, first = part4.layer_window(final)
    assert set(first) >= {"qkv", "o", "gate_up", "down", "attention"}
    assert final.name(first["attention"]) == "attention_kernel"
    assert len(part4.graph_launches(final)) == len(m.decode_steps(final))


@pytest.mark.skipif(not has_check(), reason="logits_check_8b not recorded yet")
def test_logits_check():
    f = chapter().logits_facts()
    assert f["lg_positions"] == 63 and f["l2_mib"] == 60 and f["lg_rel_max"] < 0.1


def test_sessions_are_read_from_the_recordings():
    """Part 4's last rows compare their recording sessions, kept beside the current repeats."""
    sess = chapter().sess
    assert set(sess) == set(_sessions.SESSION_ROWS)
    assert all(len(sess[v]) >= 2 for v in _sessions.SESSION_ROWS)
    # the current session is the last, and no earlier one repeats it
    for v in _sessions.SESSION_ROWS:
        assert [x["tokens_per_s"] for x in sess[v][-1]] == [
            r.results["tokens_per_s"] for r in recs(v)
        ]
        stamps = [x["recorded_at"] for ss in sess[v] for x in ss]
        assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    f = chapter().session_facts()
    assert f["sess_u_n"] == sum(len(ss) for ss in sess[m.FINAL])
    assert f["sess_tuned_n"] == sum(len(ss) for v in _sessions.SESSION_ROWS[:-1] for ss in sess[v])
    assert f["n_other_code"] == 4
