"""A fix's proof in words: what re-diagnosing the machine as the commands leave it said.

One sentence for every renderer (text, Markdown, the app), so a verified fix reads the same everywhere.
The words never claim more than the proof: "verified" only when no error remained, and what could not
be checked again until the commands have really run is named.
"""

from __future__ import annotations

from bnbdoctor.findings import Proof

#: How many remaining errors a sentence names before "and N more".
_NAMED = 3


def proof_label(proof: Proof) -> str:
    """A short mark: "verified", "not enough" or "not verified"."""
    if proof.verified is None:
        return "not verified"
    return "verified" if proof.verified else "not enough"


def proof_sentence(proof: Proof) -> str:
    """The proof as one sentence (two with what was not re-checked)."""
    if proof.verified is True:
        text = "Re-diagnosed as these commands (with the report's others) leave the machine: no error remains."
        if proof.unknown:
            text += f" Checked again only once they have run: {', '.join(proof.unknown)}."
        return text
    if proof.verified is False:
        named = [entry.split(":", 1)[0] for entry in proof.remaining[:_NAMED]]
        more = len(proof.remaining) - len(named)
        shown = ", ".join(named) + (f" and {more} more" if more > 0 else "")
        titles = "; ".join(proof.remaining[:_NAMED])
        return f"After the report's commands the doctor would still report {shown} ({titles})."
    first = proof.not_replayed[0] if proof.not_replayed else "a command bnbdoctor cannot replay"
    return f"{first}. Run bnbdoctor again after it."


def proof_short(proof: Proof) -> str:
    """The proof in one short line, for the app's detail pane (the report has the whole sentence)."""
    if proof.verified is True:
        return "Verified: re-diagnosed as these commands leave the machine, no error remains."
    if proof.verified is False:
        named = ", ".join(entry.split(":", 1)[0] for entry in proof.remaining[:_NAMED])
        return f"Not enough: after these commands the doctor would still report {named}."
    return "Not verified: a command here does what bnbdoctor cannot replay; run it again afterwards."
