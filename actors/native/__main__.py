"""``python -m actors.native``: one native worker on stdin/stdout (see ``actors.native.worker``)."""

import sys

from actors.native.worker.main import main

sys.exit(main())
