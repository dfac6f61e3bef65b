#!/usr/bin/env python
"""Django's command line in a clone; an installed copy runs the same as `contextviewer`
(contextviewer/cli.py, which says why it ends and starts `import` as it does)."""

from contextviewer.cli import main

if __name__ == "__main__":
    main()
