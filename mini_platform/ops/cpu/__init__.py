"""CPU kernels in plain torch: the specification every other backend is tested against."""
