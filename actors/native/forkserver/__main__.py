"""``python -m actors.native.forkserver ADDRESS [--background]``: the fork server (``server``)."""

import sys

from actors.native.forkserver.server import main

sys.exit(main())
