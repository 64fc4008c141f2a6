"""`python -m detect.cli ...` runs the `detect` command."""

import sys

from detect.cli import main

sys.exit(main())
