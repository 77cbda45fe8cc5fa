"""``python -m tracesite check [EXAMPLES_DIR]``: one line per stale recording."""

import sys

from .recordings import main

sys.exit(main(sys.argv[1:]))
