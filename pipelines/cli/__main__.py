"""`python -m axialrope.pipelines.cli ...` runs the `axialrope` command (e.g. under `accelerate launch -m`)."""

import sys

from . import main

sys.exit(main())
