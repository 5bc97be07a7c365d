"""More than one process (chapter 8): device communicators over ``torch.distributed``, the tensor- and
expert-parallel groups of each worker, and the executor that runs one worker process per rank.

Importing this package imports nothing; take what you need from its modules. Floor 4 (below the model):
``communicator`` (collectives), ``parallel_state`` (groups), ``moe_dispatch`` (expert-parallel token
exchange). Floor 2 (beside the engine): ``worker`` (one process per rank) and ``executor`` (the driver's
side, behind ``LLM(..., tensor_parallel_size=N)``).
"""
