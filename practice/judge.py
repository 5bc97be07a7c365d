"""The local judge of the course exercises: ``python practice/judge.py 180``.

    python practice/judge.py 180 [FILE]    judge the workspace file (created from the starter) or FILE
    python practice/judge.py list | show ID | hint ID | solution ID | doctor | check [IDS] | reset ID
    python practice/judge.py engine [--parts 194,213 | --chapter 6]   the engine with your accepted parts

The command line itself is practice/judging/cli.py (see its docstring): this script only imports it, because
Python caches a module's compiled bytecode but compiles a script anew on every run.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judging.cli import *  # noqa: E402,F401,F403 - the tests use the command line's names through this module
from judging.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
