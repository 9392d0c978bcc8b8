"""C2SP signed notes: byte-for-byte the Go reference vector, and the rejection rules."""

from __future__ import annotations

import base64

import pytest

from mcpward.evidence.checkpoint import Checkpoint, CheckpointError
from mcpward.evidence.note import NoteError, NoteSigner, VerifierKey, open_note

# golang.org/x/mod/sumdb/note note_test.go: the PeterNeumann key pair, text and signature.
GO_VERIFIER = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_SEED = base64.b64decode("AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz")[1:]
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
GO_NOTE = (
    GO_TEXT
    + "\n\u2014 PeterNeumann "
    + "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNX"
    + "gKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)


def test_signing_reproduces_the_go_reference_note_byte_for_byte() -> None:
    signer = NoteSigner.from_seed("PeterNeumann", GO_SEED)
    assert signer.verifier().encode() == GO_VERIFIER
    assert signer.sign(GO_TEXT) == GO_NOTE


def test_the_go_reference_note_verifies_and_an_edit_does_not() -> None:
    key = VerifierKey.parse(GO_VERIFIER)
    assert open_note(GO_NOTE, [key]) == GO_TEXT
    with pytest.raises(NoteError) as caught:
        open_note(GO_NOTE.replace("cryptography", "cryptographY"), [key])
    assert caught.value.reason == "bad_signature"


def test_a_note_without_a_trusted_signature_is_rejected() -> None:
    other = NoteSigner.from_seed("PeterNeumann", bytes(32)).verifier()
    with pytest.raises(NoteError) as caught:
        open_note(GO_NOTE, [other])
    assert caught.value.reason == "unknown_key"


@pytest.mark.parametrize(
    "note",
    [
        GO_TEXT,  # no signatures
        GO_TEXT + "\n",  # blank line, no signature lines
        GO_TEXT + "\n- PeterNeumann abc=\n",  # not an em dash
        GO_TEXT + "\n\u2014 PeterNeumann !!!\n",  # not base64
        "bad\x01text\n\n" + GO_NOTE.split("\n\n")[1],  # control character
    ],
)
def test_malformed_notes_are_rejected(note: str) -> None:
    with pytest.raises(NoteError) as caught:
        open_note(note, [VerifierKey.parse(GO_VERIFIER)])
    assert caught.value.reason == "malformed"


@pytest.mark.parametrize(
    "text",
    [
        "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # wrong id
        "PeterNeumann+c74f20a3+AhpcMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # wrong length/type
        "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # space in name
        "PeterNeumann+c74f20a3",
    ],
)
def test_bad_verifier_keys_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        VerifierKey.parse(text)


def test_checkpoint_body_round_trips_and_rejects_bad_lines() -> None:
    cp = Checkpoint("mcpward.local/ledger/abc", 42, bytes(range(32)), 1_700_000_000)
    assert Checkpoint.parse(cp.text()) == cp
    assert cp.text().splitlines()[1] == "42"
    for bad in (
        "x\n1\n\n",
        "o\n01\n" + "A" * 44 + "\ntime 1\n",
        "o\n1\nAAAA\ntime 1\n",
        cp.text() + "extra\n",
    ):
        with pytest.raises(CheckpointError):
            Checkpoint.parse(bad)
