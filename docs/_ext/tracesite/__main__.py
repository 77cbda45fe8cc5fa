"""``python -m tracesite check [EXAMPLES_DIR]``: one line per stale recording.
``python -m tracesite facts [PAGE ...] [--refresh]``: compute pages' facts (docs/facts)."""

import sys

if sys.argv[1:2] == ["facts"]:
    from .facts import main as facts_main

    sys.exit(facts_main(sys.argv[2:]))

from .recordings import main

sys.exit(main(sys.argv[1:]))
