"""Graph capture (chapter 7): capture sizes, persistent input buffers, graph wrappers, piecewise graphs.

By default every graph is a full decode graph (vLLM's ``FULL_DECODE_ONLY``): the whole forward of a decode step,
attention included, one per capture size (``capture_sizes.decode_capture_sizes``). ``compilation_config``'s other
``cudagraph_mode`` values (``config``) compile the model with ``torch.compile`` and split it at attention
(``attention_op``, ``split``, ``piecewise``, ``forward_context``): the pieces are captured per token count with the
same wrappers, and ``capture_sizes.dispatch_cudagraph`` picks each step's runtime mode.

A static graph wrapper (the class a platform names in ``get_static_graph_wrapper_cls()``) has this
interface, which the model runner relies on:

- ``cls(runnable, device)``: ``runnable(num_tokens)`` runs the model on the first ``num_tokens`` rows of
  the persistent input buffers and returns its output;
- ``wrapper.capture(size)``: capture the runnable for ``size`` rows (once, at start-up);
- ``wrapper.replay(size, metadata) -> Tensor``: replay it after the buffers were filled; ``metadata``
  (the step's ``AttentionMetadata``) is for wrappers that patch the graph per replay (ACL graph).

Wrappers: :class:`~mini_platform.compilation.cpu_graph.CPUGraphWrapper` (the CPU graph of
:mod:`mini_platform.ops.graph`), :class:`~mini_platform.compilation.cuda_graph.CUDAGraphWrapper`
(``torch.cuda.CUDAGraph``), and the Ascend plugin's ``mini_platform.ascend.acl_graph.ACLGraphWrapper``.
"""
