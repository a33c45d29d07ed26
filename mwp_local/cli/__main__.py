"""``python -m mwp_local.cli``: the same as ``mwp-local``."""

import sys

from . import main

sys.exit(main())
