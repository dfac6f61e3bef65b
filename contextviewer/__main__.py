"""`python -m contextviewer ...`: the `contextviewer` command (contextviewer/cli.py) where its script
is not on PATH, or to start one with this very interpreter."""

from contextviewer.cli import main

if __name__ == "__main__":
    main()
