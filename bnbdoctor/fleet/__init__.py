"""``bnbdoctor fleet``: many nodes' reports in, the groups of nodes that look alike out.

Reports written by ``bnbdoctor --json -o DIR/%N.json`` on every node are read one at a time
(:mod:`.inputs`), each boiled down to a fingerprint (:mod:`.extract`: its finding ids and a few key
facts), and nodes with the same fingerprint form a group (:mod:`.aggregate`). The fleet report
(:mod:`bnbdoctor.fleet_report`, data) is shown as text, JSON or Markdown (:mod:`bnbdoctor.render.fleet`);
:mod:`.status` maps it to exit codes and Nagios states. The command itself is :mod:`.cli`.
"""
