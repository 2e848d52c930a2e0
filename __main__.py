"""``python -m sparring``: the ``sparring`` command line (:mod:`sparring.framework.cli`), for an environment
where the console script is not on the PATH."""
import sys

from sparring.framework.cli import main

if __name__ == '__main__':
    sys.exit(main())
