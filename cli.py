#!/usr/bin/env python3
"""Run gs-cgen from a checkout without installing it."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gs_cgen.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
