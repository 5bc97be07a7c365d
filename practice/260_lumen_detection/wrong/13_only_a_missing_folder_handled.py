# Mistake: only FileNotFoundError is caught, so a root whose dev is a file (no dev folder) raises NotADirectoryError.
"""The reference Lumen project with one change in lumen_npu/__init__.py."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/__init__.py',
                 '    except OSError:',
                 '    except FileNotFoundError:')
