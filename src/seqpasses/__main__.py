import sys

from seqpasses.cli import main

sys.exit(main())
