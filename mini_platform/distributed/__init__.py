"""More than one process (chapter 8): device communicators over ``torch.distributed`` and the tensor-
and expert-parallel groups of each worker.

Importing this package imports nothing; take what you need from its modules. Floor 4 (below the model):
``communicator`` (collectives), ``parallel_state`` (groups), ``moe_dispatch`` (expert-parallel token
exchange), ``shm_allreduce`` (the CPU's shared-memory all-reduce), ``shm_broadcast`` (the shared-memory
ring the executor broadcasts each step through). The worker processes and the executor that drives them use these from a floor above, in
``mini_platform.executor``.
"""
