# Correct: the communicator copies each Lumen tensor to a CPU tensor and copies the result back into the Lumen tensor (copies instead of views: slower, same result).
"""The reference Lumen project with one change."""
from capstone.harness import REFERENCE, mutate

PROJECT = mutate(REFERENCE, 'lumen_npu/communicator.py', '''    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        super().all_reduce(host(x))
        return x

    def broadcast(self, x: torch.Tensor, src: int = 0) -> torch.Tensor:
        super().broadcast(host(x), src)
        return x''', '''    def all_reduce(self, x: torch.Tensor) -> torch.Tensor:
        return x.copy_(super().all_reduce(x.cpu()))

    def broadcast(self, x: torch.Tensor, src: int = 0) -> torch.Tensor:
        return x.copy_(super().broadcast(x.cpu(), src))''')
