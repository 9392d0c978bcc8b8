"""The review console: a server-rendered web UI for holds, pins, receipts, the ledger and guards."""
