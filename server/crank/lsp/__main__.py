"""``python -m crank.lsp``: the editor server (same as ``crank serve``)."""

import sys

from .serve import main

sys.exit(main(sys.argv[1:]))
