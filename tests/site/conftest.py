"""The site's glue (docs/_ext/tracesite) is importable in these tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))
