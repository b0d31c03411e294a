"""Pure parsers for native binaries (ELF, PE, ld.so.cache): bytes in, plain dataclasses out."""
