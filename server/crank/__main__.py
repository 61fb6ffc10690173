"""``python -m crank`` is ``crank``."""

import sys

from crank.cli.main import main

sys.exit(main())
