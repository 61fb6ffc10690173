"""``python -m crank.acp``: the ACP agent (same as ``crank acp``)."""

import sys

from .serve import main

sys.exit(main(sys.argv[1:]))
