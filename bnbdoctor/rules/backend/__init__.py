"""Rules about the backend torch gives bitsandbytes when it is not CUDA: the CPU library that backend needs
(BNB209), and transformers' bitsandbytes check that needs CUDA (BNB210).

Both take for granted that torch matches the machine's GPU (the premise ``torch-matches-gpu``): on a GPU
machine with a CPU-only torch, BNB202 is the root cause and these follow from it.
"""
