"""``python -m crank.lsp``: the editor server (same as ``crank serve``)."""

import sys

from crank.vendors.secrets import handover

from .serve import main

handover()  # provider keys out of the environment before anything runs
main(sys.argv[1:])  # ends the process (serve.leave)
