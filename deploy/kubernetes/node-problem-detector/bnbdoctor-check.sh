#!/bin/bash
# node-problem-detector custom plugin: bnbdoctor on this node (deploy/kubernetes/node-problem-detector/).
#
# NPD's plugin protocol is an exit code and one line of stdout: 0 OK, 1 NonOK (sets the
# BitsandbytesProblem condition, reason BitsandbytesBroken), 2 Unknown. bnbdoctor's own exit codes mean the
# same (0 no error findings, 1 error findings, 2 it could not run), so they pass straight through; the line
# names the rules that found errors. The monitor's rule timeout is 55 s; the doctor gets 45 s of it.
#
# bnbdoctor must be where NPD runs the plugin: on the host (NPD standalone, systemd) or in an NPD image
# extended with it. BNBDOCTOR_PYTHON names the interpreter to examine; BNBDOCTOR the command.
# Tested in tests/test_deploy.py with a stand-in doctor.
set -u
doctor=${BNBDOCTOR:-bnbdoctor}
folder=${BNBDOCTOR_REPORTS:-/var/lib/bnbdoctor}
report="$folder/npd-report.json"
args=(--json -o "$report")
[[ -n ${BNBDOCTOR_PYTHON:-} ]] && args+=(--python "$BNBDOCTOR_PYTHON")
mkdir -p "$folder" 2>/dev/null || { echo "bnbdoctor: cannot create $folder"; exit 2; }
timeout -k 5 45 "$doctor" "${args[@]}" 2>"$folder/npd-doctor.log"
rc=$?
case $rc in
    0) echo "bnbdoctor found no error"; exit 0 ;;
    1)
        rule="" ids=""
        while IFS= read -r line; do
            [[ $line =~ \"rule_id\":\ \"([A-Z0-9]+)\" ]] && rule=${BASH_REMATCH[1]}
            [[ $line =~ \"severity\":\ \"error\" && -n $rule ]] && ids+="${ids:+,}$rule" && rule=""
        done <"$report"
        echo "bnbdoctor: ${ids:-errors} (see $report)"
        exit 1
        ;;
    124 | 137) echo "bnbdoctor: no answer within 45s"; exit 2 ;;
    *) echo "bnbdoctor failed (exit $rc), see $folder/npd-doctor.log"; exit 2 ;;
esac
