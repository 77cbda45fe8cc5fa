"""The home page's facts (``index.md``): where and when the site's recordings were made."""

from __future__ import annotations

from collections import Counter

from tracesite.facts import Facts, claim

EXAMPLE = "01_matmul_add"


def facts(f: Facts) -> None:
    recs = f.every_recording()
    claim(recs, "the site ships recordings")

    def values(key: str) -> str:
        """Every value of one stamp field, the most common first (one, normally)."""
        seen = Counter(str(r.env.get(key, "unknown")) for r in recs)
        return ", ".join(v for v, _ in seen.most_common())

    dates = sorted(str(r.env.get("recorded_at", ""))[:10] for r in recs)
    when = dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"
    examples = sorted({r.example for r in recs})
    by_gpu = Counter(str(r.env.get("gpu", "unknown")) for r in recs)
    f.md(
        "rec_gpu",
        ", ".join(
            f"{gpu} ({n} recordings of {len({r.example for r in recs if r.env.get('gpu') == gpu})}"
            " examples)"
            for gpu, n in by_gpu.most_common()
        ),
    )
    for key in ("driver", "torch", "cuda", "python"):
        f.md(f"rec_{key}", values(key))
    f.md("rec_when", when)
    f.md(
        "rec_count",
        f"{len(recs)} recordings of {len(examples)} example{'s' if len(examples) != 1 else ''}",
    )
    f.md("rec_kib", f"{sum(r.trace_bytes for r in recs) / 1024:.0f} KiB")
