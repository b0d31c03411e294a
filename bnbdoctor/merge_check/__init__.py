"""``bnbdoctor merge-check``: how much of a LoRA adapter survives a merge into 4-bit weights, measured.

- :mod:`.core` resolves the adapter and its base and runs the engine; :mod:`.engine` ships
  :mod:`.engine_script` to the patient interpreter (bnbdoctor never imports torch itself);
- :mod:`bnbdoctor.merge_check_result` holds what was measured (data), :mod:`bnbdoctor.render.merge_check_words`
  says it in words; :mod:`.cli` is the command line.
"""
