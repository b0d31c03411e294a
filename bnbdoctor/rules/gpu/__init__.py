"""Rules about GPU architectures: minimums, int8 tensor cores, kernels shipped, mixed boxes."""
