"""More than one process (chapter 8): device communicators over ``torch.distributed``, the tensor- and
expert-parallel groups of each worker, and the executor that runs one worker process per rank.

Importing this package imports nothing heavy; take what you need from its modules:
``communicator`` (collectives), ``parallel_state`` (groups), ``moe_dispatch`` (expert-parallel token
exchange), ``executor`` (worker processes behind ``LLM(..., tensor_parallel_size=N)``).
"""
