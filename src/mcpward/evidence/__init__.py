"""Evidence: decision receipts, the HMAC-chained ledger with signed checkpoints, verification.

The relay reports decisions through `record.Recorder`; `recorder.build_recorder` makes one.
"""
