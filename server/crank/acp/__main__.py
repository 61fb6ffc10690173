"""``python -m crank.acp``: the ACP agent (same as ``crank acp``)."""

import sys

from crank.vendors.secrets import handover

from .serve import main

handover()  # provider keys out of the environment before anything runs
sys.exit(main(sys.argv[1:]))
