"""The npu kernel backend: torch_npu ops called with the signatures vllm-ascend uses."""
