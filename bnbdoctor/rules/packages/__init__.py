"""Rules about the Python side: torch and bitsandbytes present, builds and versions that fit."""
