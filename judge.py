"""`python judge.py 180` is `python practice/judge.py 180`: this file only forwards to it."""
import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    target = Path(__file__).resolve().parent / "practice" / "judge.py"
    sys.argv[0] = str(target)
    runpy.run_path(str(target), run_name="__main__")
