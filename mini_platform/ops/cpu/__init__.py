"""CPU kernels in plain torch: the specification every other backend is tested against."""

# The platform these kernels belong to: its graph wrapper captures them.
PLATFORM = "mini_platform.platforms.cpu.CpuPlatform"
