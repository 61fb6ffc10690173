"""The exit statuses of ``crank``: the one table, which the README's table repeats.

Every command returns one of these; nothing else in ``crank.cli`` writes a number.
``tests/cli/test_exits.py`` checks the README's table against ``EXIT_CODES``, so the
two cannot drift apart.
"""

from __future__ import annotations

from typing import Final

OK: Final = 0
FAILURE: Final = 1
USAGE: Final = 2
INTERRUPTED: Final = 130
PIPE_CLOSED: Final = 141

EXIT_CODES: Final[dict[int, str]] = {
    OK: "the command did what was asked (for `crank run`: the model answered)",
    FAILURE: (
        "it failed, and stderr says why in one line `Error: ...`: no provider configured,"
        " a model error, a bad `--image`, `--script` or `--session`, a folder that"
        " cannot be used"
    ),
    USAGE: "the command line itself was wrong (an unknown option, a missing argument)",
    INTERRUPTED: "Ctrl-C: the run was aborted and its session saved",
    PIPE_CLOSED: "the reader of stdout went away (`crank sessions list` piped into `head -1`)",
}
"""Each status and when ``crank`` ends with it."""
