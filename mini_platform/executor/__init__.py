"""Worker processes and the executor that drives them (chapter 8), floor 2 beside the engine.

Kept apart from ``distributed/`` (floor 4: communicators and process groups, which the model uses), as
vLLM keeps ``vllm/distributed/`` apart from ``vllm/v1/executor/`` and ``vllm/v1/worker/``: a worker
builds the model runner and the model, so it sits above them. ``worker`` is one process per rank;
``multiproc`` is the driver's side behind ``LLM(..., tensor_parallel_size=N)``.
Importing this package imports nothing; take what you need from its modules.
"""
