"""What ``fit`` and ``merge-check`` both read before their engines run: a model's files and the interpreter.

- :mod:`.hub_cache`: the Hugging Face cache folder and a model id's entry in it, as huggingface_hub lays
  it out (offline: nothing here contacts the Hub);
- :mod:`.checkpoint`: a cache entry's snapshot, the safetensors files from_pretrained reads, and their
  headers;
- :mod:`.interpreter`: the patient interpreter the engine runs in, chosen as the doctor chooses it.

Both commands read models alike, so these live below both (neither imports the other). Bad input raises
the calling command's own one-line error type (its ``error`` argument), as
:func:`bnbdoctor.probes.python_env.require_python` does: fit says ``FitInputError``, merge-check
``MergeInputError``, and each command's own words stay in the command.
"""
