"""Rules about the NVIDIA driver: is there one, and is it new enough for torch's CUDA."""
