"""`python -m taas_operator.controller`: the same as `taas operator`."""

import sys

from taas_operator.controller.main import main

sys.exit(main())
