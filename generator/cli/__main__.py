"""`python -m generator.cli`: the `tunesmith` command."""

import sys

from generator.cli import main

sys.exit(main())
