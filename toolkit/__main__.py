"""`python -m toolkit` runs the gpuctl command line."""

import sys

from toolkit.cli import main

sys.exit(main())
