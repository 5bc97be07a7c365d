"""The judge's internals; ``practice/judge.py`` is the command.

``exercises`` (the exercise format), ``judge_core`` (the test-running core, which the site's browser
worker runs too, with ``render``, the one renderer of verdicts), ``sandbox`` (the isolated child process
of every judgement), ``progress`` (verdicts and hints per learner), ``engine_parts`` and ``engine_run``
(``judge.py engine``: the engine assembled from the learner's parts). Standard library only, except
``judge_core`` (pytest) and what the children import. Importing the package imports none of them.
"""
