"""CPU kernels in plain torch: the specification every other backend is tested against. Decode attention also has
a numba-compiled version (:mod:`.compiled`), which the engine runs on fp32 when numba is installed."""

# The platform these kernels belong to: its graph wrapper captures them.
PLATFORM = "mini_platform.platforms.cpu.CpuPlatform"
