"""Rules about the native-library chain: the file bitsandbytes picks, what it needs, where the
loader finds it, the symbol versions it requires, and what the real loader said."""
