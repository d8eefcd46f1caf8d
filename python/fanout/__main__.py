"""`python -m fanout`: which fanout this is, and which torch and Python it runs with."""
import os
import sys

import torch

import fanout


def main():
    print("fanout %s (%s)" % (fanout.__version__, os.path.dirname(os.path.abspath(fanout.__file__))))
    print("torch %s (%s)" % (torch.__version__, os.path.dirname(os.path.abspath(torch.__file__))))
    print("python %s (%s)" % (sys.version.split()[0], sys.executable))
    return 0


if __name__ == "__main__":
    sys.exit(main())
